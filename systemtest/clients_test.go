package systemtest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// clientsDir holds the corpus: one directory per shop plugin, each with
// requests.json (clientManifest) and the request bodies it names.
var clientsDir = filepath.Join("..", "testdata", "clients")

// TestRealClients replays, for each shop plugin of testdata/clients, the
// requests the plugin makes (docs/clients.md), in the plugin's order and
// with its headers, through a real server, after the company settings the
// manifest gives: every upload is answered {"response": "ok", "run_id"},
// its run completes with exactly the rejections the manifest lists as
// known gaps (none today: every record is imported) and the warnings it
// lists for the plugin's own fields, and retrieval shows every expected
// field in its normal form. Then guests stay apart (one customer per guest email,
// none with an external_id) and every customer has its own tracking token.
func TestRealClients(t *testing.T) {
	t.Parallel() // and so is each plugin's subtest (newEnv)
	for _, plugin := range []string{"magento2", "woocommerce"} {
		t.Run(plugin, func(t *testing.T) {
			m := readClientManifest(t, plugin)
			e := newEnv(t)
			e.configureCompany(t, m.Company)
			e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewShops(), retrievalproj.NewProducts(),
				retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys))
			e.runImports()
			vars := map[string]string{"token": e.integrationToken(plugin)}
			for i, r := range m.Requests {
				e.replay(t, fmt.Sprintf("%s request %d (%s)", plugin, i, r.Name), filepath.Join(clientsDir, plugin), m.Headers, r, vars)
			}
			e.checkGuests(t, vars["token"], m.Guests)
			e.checkTokens(t, vars["token"])
		})
	}
}

// configureCompany applies the manifest's company settings to acme, as
// the shop owner would with `clientele company update`.
func (e *env) configureCompany(t *testing.T, s clientCompany) {
	t.Helper()
	if s == (clientCompany{}) {
		return
	}
	_, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(e.acme.ID), CompanyID: e.acme.ID,
		Change: company.SettingsChange{Timezone: s.Timezone, PhoneRegion: s.PhoneRegion},
	})
	if err != nil {
		t.Fatalf("company settings %+v: %v", s, err)
	}
}

// integrationToken creates an integration named name and the access token
// a shop owner pastes into the plugin's settings: the integration's, with
// the admin's roles.
func (e *env) integrationToken(name string) string {
	e.t.Helper()
	admin := e.userToken(e.admin, acmeHost)
	id := e.createIntegration(admin, name)
	return e.createToken(admin, map[string]any{
		"owner_id": "integrations/" + id, "name": name, "transfer_privileges": true,
	}).AccessToken.Token
}

// checkGuests checks that each guest's orders made one customer of their
// own, found by the guest's email and without an external_id, and that
// the guest's sale kept the guest's email and no customer id.
func (e *env) checkGuests(t *testing.T, token string, guests []clientGuest) {
	t.Helper()
	seen := map[string]string{} // customer id -> guest email
	for _, g := range guests {
		found := e.retrieveAll(token, "customers", withQuery("email", g.Email)).Items
		if len(found) != 1 {
			t.Errorf("guest %s: %d customers, want 1: %v", g.Email, len(found), found)
			continue
		}
		c := found[0]
		if _, ok := c["external_id"]; ok {
			t.Errorf("guest %s got an external_id: %v", g.Email, c)
		}
		id, _ := c["id"].(string)
		if other, ok := seen[id]; ok {
			t.Errorf("guests %s and %s are one customer %s", other, g.Email, id)
		}
		seen[id] = g.Email
		sales := e.retrieveAll(token, "sales", withQuery("sale_external_id", g.Sale)).Items
		if len(sales) != 1 || sales[0]["sale_email"] != g.Email || sales[0]["sale_customer_id"] != nil {
			t.Errorf("guest %s: sale %s is %v, want one with sale_email %s and no sale_customer_id", g.Email, g.Sale, sales, g.Email)
		}
	}
}

// checkTokens checks that every customer has a customer_token of its own
// and that filtering by it finds that customer alone.
func (e *env) checkTokens(t *testing.T, token string) {
	t.Helper()
	customers := e.retrieveAll(token, "customers", withQuery("limit", "10000")).Items
	owner := map[string]string{} // token -> customer id
	for _, c := range customers {
		id, _ := c["id"].(string)
		tok, _ := c["customer_token"].(string)
		if tok == "" {
			t.Errorf("customer %s (%v) has no customer_token", id, c["email"])
			continue
		}
		if other, ok := owner[tok]; ok {
			t.Errorf("customers %s and %s share a customer_token", other, id)
		}
		owner[tok] = id
		if found := e.retrieveAll(token, "customers", withQuery("customer_token", tok)).Items; len(found) != 1 || found[0]["id"] != id {
			t.Errorf("filter customer_token of %s finds %v", id, customerIDs(found))
		}
	}
	if len(customers) == 0 {
		t.Error("no customers at all")
	}
}
