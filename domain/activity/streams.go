package activity

// Stream is the stream of a company's events, "activity-<company>": one
// stream per company, appended without a version check, since ids come
// from the company's counter (activity_counters) and not from stream
// versions. It is the one stream not named "<kind>-<company>-<id>".
func Stream(companyID string) string { return "activity-" + companyID }
