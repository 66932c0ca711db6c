package datatarget

import (
	"strings"

	"github.com/clientele/clientele/domain"
)

// messagesKind is the kind of a messages stream, which
// DatatargetOfMessagesStream recognises.
const messagesKind = "dtmessages"

// Stream is a datatarget's stream, "datatarget-<company>-<datatarget>":
// its creation and changes. Its messages have a stream of their own,
// MessagesStream.
func Stream(companyID, datatargetID string) string {
	return domain.StreamID("datatarget", companyID, datatargetID)
}

// OutletStream is an outlet's stream, "outlet-<company>-<outlet>".
func OutletStream(companyID, outletID string) string {
	return domain.StreamID("outlet", companyID, outletID)
}

// MessagesStream is the stream of a datatarget's messages,
// "dtmessages-<company>-<datatarget>". It is a stream of its own so that
// its versions count messages only: the event store assigns them under
// the stream's row lock, consecutive and without gaps, which is exactly
// the numbering a queue needs, and replaying the log gives every message
// its number again.
func MessagesStream(companyID, datatargetID string) string {
	return domain.StreamID(messagesKind, companyID, datatargetID)
}

// DatatargetOfMessagesStream returns the datatarget whose messages stream
// is streamID. Identifiers contain no "-", so the id is what follows the
// last one.
func DatatargetOfMessagesStream(streamID string) (string, bool) {
	if !strings.HasPrefix(streamID, messagesKind+"-") {
		return "", false
	}
	i := strings.LastIndexByte(streamID, '-')
	if i < len(messagesKind) || i == len(streamID)-1 {
		return "", false
	}
	return streamID[i+1:], true
}
