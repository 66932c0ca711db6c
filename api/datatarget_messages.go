package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// handlePostMessages serves POST /api/datatargets/<id>/post/: the body is
// {"messages": [objects]} (a bare list is accepted too); the answer gives
// the number of the first message and the count.
func (s *Server) handlePostMessages(c *gin.Context) error {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	var list []json.RawMessage
	var dest any = &req
	if first := firstByte(c); first == '[' {
		dest = &list
	}
	if err := decodeJSON(c.Request, dest, false); err != nil {
		return err
	}
	if dest == &req {
		list = req.Messages
	}
	p, _ := principalOf(c)
	posted, err := s.commands.PostDatatargetMessages.Handle(commandContext(c), commands.PostDatatargetMessages{
		Principal: p, DatatargetID: c.Param("id"), Messages: list,
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"first_message_number": posted.FirstMessageNumber, "messages_count": posted.MessagesCount})
	return nil
}

// firstByte returns the first non-space byte of the request body and
// leaves it to be read again.
func firstByte(c *gin.Context) byte {
	if c.Request.Body == nil {
		return 0
	}
	br := bufio.NewReader(c.Request.Body)
	c.Request.Body = struct {
		io.Reader
		io.Closer
	}{br, c.Request.Body}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			_ = br.UnreadByte()
			return b
		}
	}
}

// handleRetrieve serves GET /api/datatargets/<id>/retrieve/?after=&limit=:
// messages numbered above after (default 0), at most limit (default 100,
// at most 10,000), in order, as {"last_message_number": n, "messages":
// [...]}; when nothing follows, {"messages": []}. The body is assembled
// from the stored messages as they are, without decoding them.
func (s *Server) handleRetrieve(c *gin.Context) error {
	after, err := intParam(c, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(c, "limit", datatarget.DefaultRetrieveLimit, 1, 1<<31)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	page, err := s.datatargets.Messages(c.Request.Context(), p.CompanyID, c.Param("id"), after, int(min(limit, datatarget.MaxRetrieveLimit)))
	if err != nil {
		return err
	}
	size := 32
	for _, m := range page.Messages {
		size += len(m) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	if len(page.Messages) > 0 {
		b = append(b, `"last_message_number":`...)
		b = strconv.AppendInt(b, page.LastMessageNumber, 10)
		b = append(b, ',')
	}
	b = append(b, `"messages":[`...)
	for i, m := range page.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	b = append(b, "]}"...)
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
	return nil
}

// intParam reads an integer query parameter within [lo, hi], def when
// absent.
func intParam(c *gin.Context, name string, def, lo, hi int64) (int64, error) {
	v, ok := c.GetQuery(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, &domain.Error{Code: domain.Invalid, Message: "query parameter " + name + " must be an integer of at least " + strconv.FormatInt(lo, 10),
			Details: []domain.FieldError{{Field: name, Reason: "must be an integer"}}}
	}
	return n, nil
}
