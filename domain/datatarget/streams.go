package datatarget

import "strings"

// Stream kinds. A datatarget's messages have a stream of their own so that
// its versions count messages only: the event store assigns them under the
// stream's row lock, consecutive and without gaps, which is exactly the
// numbering a queue needs, and replaying the log gives every message its
// number again.
const (
	StreamKind         = "datatarget"
	OutletStreamKind   = "outlet"
	MessagesStreamKind = "dtmessages"
)

// MessagesStream is the stream of a datatarget's messages,
// "dtmessages-<company>-<datatarget>".
func MessagesStream(companyID, datatargetID string) string {
	return MessagesStreamKind + "-" + companyID + "-" + datatargetID
}

// DatatargetOfMessagesStream returns the datatarget whose messages stream
// is streamID. Identifiers contain no "-", so the id is what follows the
// last one.
func DatatargetOfMessagesStream(streamID string) (string, bool) {
	if !strings.HasPrefix(streamID, MessagesStreamKind+"-") {
		return "", false
	}
	i := strings.LastIndexByte(streamID, '-')
	if i < len(MessagesStreamKind) || i == len(streamID)-1 {
		return "", false
	}
	return streamID[i+1:], true
}
