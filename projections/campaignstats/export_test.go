package campaignstats

// SetDecideChunk sets how many members the campaign statistics decide at
// a time, and returns the function that restores it.
func SetDecideChunk(n int) (restore func()) {
	old := decideChunk
	decideChunk = n
	return func() { decideChunk = old }
}
