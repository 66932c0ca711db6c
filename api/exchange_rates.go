package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
)

// exchangeRatesJSON is the company's exchange-rate table as answered: the
// default currency and, by ISO 4217 code, the rate from that currency to
// it as a canonical decimal string (default-currency amount = amount in
// that currency / rate).
type exchangeRatesJSON struct {
	Currency      string            `json:"currency"`
	ExchangeRates map[string]string `json:"exchange_rates"`
}

func newExchangeRatesJSON(c company.Company) exchangeRatesJSON {
	rates := c.ExchangeRates
	if rates == nil {
		rates = map[string]string{}
	}
	return exchangeRatesJSON{Currency: c.Currency, ExchangeRates: rates}
}

// handleGetExchangeRates serves GET /api/exchange-rates/ (our addition):
// the table sales in another currency are converted with when they carry
// no sale_exchange_rate. Any principal of the company may read it.
func (s *Server) handleGetExchangeRates(c *gin.Context) error {
	co, _ := companyOf(c)
	c.JSON(http.StatusOK, newExchangeRatesJSON(co))
	return nil
}

// handlePutExchangeRates serves PUT /api/exchange-rates/ (our addition,
// admin role): it sets the rates the body names and keeps the others. A
// rate is a JSON number or a decimal string; null (or "") removes the
// currency. An optional currency must be the company's default currency,
// so a client never stores rates meant for another base. It answers the
// whole table as GET does.
func (s *Server) handlePutExchangeRates(c *gin.Context) error {
	var req struct {
		Currency      *string                    `json:"currency"`
		ExchangeRates map[string]json.RawMessage `json:"exchange_rates"`
	}
	if err := decodeJSON(c.Request, &req, false); err != nil {
		return err
	}
	if req.ExchangeRates == nil {
		return domain.Errorf(domain.Invalid, `the body needs "exchange_rates", an object of rates by currency code, e.g. {"exchange_rates": {"USD": 1.08}}`)
	}
	p, _ := principalOf(c)
	co, _ := companyOf(c)
	var problems domain.Problems
	if req.Currency != nil && !strings.EqualFold(strings.TrimSpace(*req.Currency), co.Currency) {
		problems.Add("currency", "is not the company's default currency "+co.Currency+", to which every rate converts; change that in the company settings")
	}
	change := make(map[string]*string, len(req.ExchangeRates))
	for _, code := range slices.Sorted(maps.Keys(req.ExchangeRates)) {
		rate, ok := rateOf(req.ExchangeRates[code])
		if !ok {
			problems.Add("exchange_rates."+strings.ToUpper(strings.TrimSpace(code)),
				"must be a decimal number such as 1.08 or \"1.08\", or null to remove the rate")
			continue
		}
		change[code] = rate
	}
	if err := problems.Err(domain.Validation, "invalid exchange rates"); err != nil {
		return err
	}
	updated, err := s.commands.UpdateCompanySettings.Handle(commandContext(c), commands.UpdateCompanySettings{
		Principal: p, CompanyID: co.ID, Change: company.SettingsChange{ExchangeRates: change},
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newExchangeRatesJSON(updated))
	return nil
}

// rateOf reads one rate of a PUT body: a JSON number as written (never
// through a float, so 1.1 stays 1.1) or a string; null and "" are nil,
// which removes the currency. ok is false for booleans, lists and objects.
func rateOf(raw json.RawMessage) (rate *string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	var s string
	switch v := v.(type) {
	case nil:
		return nil, true
	case json.Number:
		s = v.String()
	case string:
		s = strings.TrimSpace(v)
		if s == "" {
			return nil, true
		}
	default:
		return nil, false
	}
	return &s, true
}
