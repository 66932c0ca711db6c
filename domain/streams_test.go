package domain_test

import (
	"testing"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/shop"
)

// TestStreamNames pins every aggregate's stream name. The names are
// stored in the event log: a name that changes orphans the streams
// written under the old one, so a failure here is never fixed by
// updating the want column.
func TestStreamNames(t *testing.T) {
	const (
		co = "0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4"
		id = "0190ffeeddccbbaa9988776655443322"
	)
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"customer", customer.Stream(co, id), "customer-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"product", product.Stream(co, id), "product-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"shop", shop.Stream(co, id), "shop-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"sale", sale.Stream(co, id), "sale-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"activity", activity.Stream(co), "activity-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4"},
		{"company", company.Stream(co), "company-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4"},
		{"company slug", company.SlugStream("acme-shop"), "companyslug-acme-shop"},
		{"company domain", company.DomainStream("crm.acme.example"), "companydomain-crm.acme.example"},
		{"user", access.UserStream(co, id), "user-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"user email", access.UserEmailStream(co, "ann-lee@example.com"), "useremail-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-ann-lee@example.com"},
		{"integration", access.IntegrationStream(co, id), "integration-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"access token", access.TokenStream(co, id), "accesstoken-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"sftp key", access.SFTPKeyStream(co, id), "sftpkey-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"campaign", campaign.Stream(co, "SPRING_24"), "campaign-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-SPRING_24"},
		{"campaign keys", campaign.KeysStream(co), "campaignkeys-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4"},
		{"datatarget", datatarget.Stream(co, id), "datatarget-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"outlet", datatarget.OutletStream(co, id), "outlet-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
		{"datatarget messages", datatarget.MessagesStream(co, id), "dtmessages-0190a1b2c3d4e5f6a7b8c9d0e1f2a3b4-0190ffeeddccbbaa9988776655443322"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("stream name = %q, want %q", tt.got, tt.want)
			}
		})
	}
}
