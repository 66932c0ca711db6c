package api

import (
	"net"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
)

// resolveCompany finds the company served at the request's host, or
// answers 404. Every tenant route starts with it.
func (s *Server) resolveCompany(c *gin.Context) {
	host := requestHost(c.Request.Host)
	co, err := s.companies.ByHost(c.Request.Context(), host)
	if err != nil {
		if domain.ErrorCode(err) == domain.NotFound {
			err = s.unknownHost(host)
		}
		s.writeError(c, err)
		c.Abort()
		return
	}
	c.Set(keyCompany, co)
	c.Next()
}

func (s *Server) unknownHost(host string) error {
	if s.cfg.BaseDomain == "" {
		return domain.Errorf(domain.NotFound, "no company is served at host %q", host)
	}
	return domain.Errorf(domain.NotFound, "no company is served at host %q; a company is reached at <company>.%s", host, s.cfg.BaseDomain)
}

// requestHost is the host of a Host header without its port, in lower
// case and without a final dot.
func requestHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// companyOf returns the company resolved for the request.
func companyOf(c *gin.Context) (company.Company, bool) {
	v, ok := c.Get(keyCompany)
	if !ok {
		return company.Company{}, false
	}
	co, ok := v.(company.Company)
	return co, ok
}
