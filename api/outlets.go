package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

// outletJSON is a webhook outlet as answered. The secret is never shown:
// has_secret (our addition) says whether requests are signed. What may
// carry a credential (every header but a few harmless ones, the URL's
// query values and password) is shown only to admins
// (revealsCredentials); others see it masked.
type outletJSON struct {
	ID                         string      `json:"id"`
	OutletType                 string      `json:"outlet_type"`
	Enabled                    bool        `json:"enabled"`
	Request                    requestJSON `json:"request"`
	IsBatched                  bool        `json:"is_batched"`
	MaxBatchSize               int         `json:"max_batch_size"`
	LastDeliveredMessageNumber int64       `json:"last_delivered_message_number"`
	DeliveredBatchCount        int64       `json:"delivered_batch_count"`
	MinRequestInterval         string      `json:"min_request_interval"`
	HasSecret                  bool        `json:"has_secret"`
	CreatedAt                  string      `json:"created_at"`
}

type requestJSON struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Format  string            `json:"format"`
	Content json.RawMessage   `json:"content"`
}

// newOutletJSON answers o; reveal shows its credentials as they are
// (revealsCredentials), else masked.
func newOutletJSON(o datatarget.Outlet, reveal bool) outletJSON {
	r := o.Request
	headers := make(map[string]string, len(r.Headers))
	for name, value := range r.Headers {
		if !reveal && !harmlessHeader(name) {
			value = masked
		}
		headers[name] = value
	}
	u := r.URL
	if !reveal {
		u = maskURL(u)
	}
	return outletJSON{
		ID: o.ID, OutletType: o.Type, Enabled: o.Enabled,
		Request:   requestJSON{URL: u, Method: r.Method, Headers: headers, Format: r.Format, Content: r.Content},
		IsBatched: o.IsBatched, MaxBatchSize: o.MaxBatchSize,
		LastDeliveredMessageNumber: o.Progress.LastDeliveredMessageNumber,
		DeliveredBatchCount:        o.Progress.DeliveredBatchCount,
		MinRequestInterval:         strconv.FormatInt(o.MinRequestInterval.Milliseconds(), 10),
		HasSecret:                  o.Secret != "", CreatedAt: timestamp(o.CreatedAt),
	}
}

// createOutletRequest is the body of POST /api/datatargets/<id>/outlets/.
// min_request_interval (milliseconds) is accepted as a number or a
// numeric string, as it is answered as a string.
type createOutletRequest struct {
	OutletType         string             `json:"outlet_type"`
	Request            datatarget.Request `json:"request"`
	IsBatched          bool               `json:"is_batched"`
	Secret             string             `json:"secret"`
	MinRequestInterval json.RawMessage    `json:"min_request_interval"`
}

// handleCreateOutlet serves POST /api/datatargets/<id>/outlets/ (staff
// role): a webhook outlet that delivers the datatarget's messages from the
// first one.
func (s *Server) handleCreateOutlet(c *gin.Context) error {
	var req createOutletRequest
	if err := decodeJSON(c.Request, &req, false); err != nil {
		return err
	}
	var interval int64
	if v := strings.Trim(string(req.MinRequestInterval), `" `); v != "" && v != "null" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return &domain.Error{Code: domain.Validation, Message: "invalid outlet",
				Details: []domain.FieldError{{Field: "min_request_interval", Reason: "must be a whole number of milliseconds"}}}
		}
		interval = n
	}
	p, _ := principalOf(c)
	o, err := s.commands.CreateOutlet.Handle(commandContext(c), commands.CreateOutlet{
		Principal: p, DatatargetID: c.Param("id"),
		Spec: datatarget.OutletSpec{Type: req.OutletType, Request: req.Request, IsBatched: req.IsBatched,
			MinRequestInterval: interval, Secret: req.Secret},
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"outlet": newOutletJSON(o, revealsCredentials(p))})
	return nil
}

// handleGetOutlet serves GET /api/datatargets/<id>/outlets/<outlet_id>/.
func (s *Server) handleGetOutlet(c *gin.Context) error {
	p, _ := principalOf(c)
	o, err := s.datatargets.Outlet(c.Request.Context(), p.CompanyID, c.Param("id"), c.Param("outlet_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"outlet": newOutletJSON(o, revealsCredentials(p))})
	return nil
}

// Credentials of outlets. An outlet's request may carry the receiver's
// credentials (an API key, a bearer token, a cookie, a signature), which
// any token of the company could otherwise read back and use elsewhere:
// they are shown only to admins, who may change the outlet anyway. Since
// a credential may hide under any header or query parameter name, what is
// masked is everything but what is known to be harmless: every header
// value but those of harmlessHeaders, every value of the URL's query, and
// the URL's password. Masking happens when answering, in outlet answers
// and in the attempt log's raw request and reply; what is stored and sent
// is never changed.

// masked replaces a credential shown to a principal that may not see it.
const masked = "****"

// revealsCredentials reports whether p may see outlet credentials: the
// admin role.
func revealsCredentials(p access.Principal) bool { return p.HasRole(access.RoleAdmin) }

// harmlessHeaders name, in lower case, the headers whose values are shown
// to everyone: they describe the content and the client, or frame the
// message (Transfer-Encoding and Connection, which outlets cannot set,
// only appear in raw texts), or identify a signed message without being
// its signature (webhook-signature is masked).
var harmlessHeaders = map[string]bool{
	"content-type": true, "content-length": true, "accept": true, "accept-encoding": true, "accept-language": true,
	"user-agent": true, "host": true, "transfer-encoding": true, "connection": true,
	"webhook-id": true, "webhook-timestamp": true,
}

// harmlessHeader reports whether the value of a header named name may be
// shown to everyone; every other header's value is masked.
func harmlessHeader(name string) bool {
	return harmlessHeaders[strings.ToLower(strings.TrimSpace(name))]
}

// maskURL masks the password and every query value of an outlet's URL,
// keeping the names (?api_key=****). A URL that does not parse, which an
// outlet's cannot be, is masked whole.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return masked
	}
	if u.User == nil && u.RawQuery == "" {
		return raw
	}
	u.RawQuery = maskQuery(u.RawQuery)
	return u.Redacted()
}

// maskQuery masks every value of a raw query, keeping the names: a=1&b
// becomes a=****&****, as a part without = may itself be a credential.
// The value runs to the next &, so a ; within it is masked with it.
func maskQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		if part == "" {
			continue
		}
		if name, _, ok := strings.Cut(part, "="); ok {
			parts[i] = name + "=" + masked
		} else {
			parts[i] = masked
		}
	}
	return strings.Join(parts, "&")
}

// maskRequestLine masks the query values of a raw request line
// (METHOD target HTTP/1.1), which may be cut short; a status line is
// returned as it is.
func maskRequestLine(line string) string {
	method, rest, ok := strings.Cut(line, " ")
	if !ok || strings.HasPrefix(method, "HTTP/") {
		return line
	}
	target, version, hasVersion := strings.Cut(rest, " ")
	path, query, hasQuery := strings.Cut(target, "?")
	if !hasQuery {
		return line
	}
	line = method + " " + path + "?" + maskQuery(query)
	if hasVersion {
		line += " " + version
	}
	return line
}

// maskRawHTTP masks a raw HTTP/1.1 message as the attempt log keeps it:
// the query values of its request line (maskRequestLine), and the values
// of its header lines up to the first empty line but those of harmless
// headers (and the continuation lines of folded values); the body, which
// is the datatarget's data, is left alone. A message cut short (the log
// caps its size) keeps the lines it has masked; a name cut before its
// colon shows no value.
func maskRawHTTP(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for n := 0; raw != ""; n++ {
		line, rest, more := strings.Cut(raw, "\n")
		text := strings.TrimSuffix(line, "\r")
		if n > 0 && text == "" {
			b.WriteString(raw) // the end of the headers, and the body
			break
		}
		switch name, _, ok := strings.Cut(text, ":"); {
		case n == 0:
			line = maskRequestLine(text) + line[len(text):]
		case text[0] == ' ' || text[0] == '\t':
			// The continuation of a folded header's value.
			line = text[:1] + masked + line[len(text):]
		case ok && !harmlessHeader(name):
			line = name + ": " + masked + line[len(text):]
		}
		b.WriteString(line)
		if more {
			b.WriteByte('\n')
		}
		raw = rest
	}
	return b.String()
}
