package campaign

import "github.com/clientele/clientele/domain"

// Stream is a campaign's stream, "campaign-<company>-<key>": named after
// its key, which never changes, so appending the creation with "no
// stream yet" makes keys unique in the company without any read model,
// and a command finds a campaign by the key it was asked for.
func Stream(companyID, key string) string {
	return domain.StreamID("campaign", companyID, key)
}

// KeysStream is the stream of a company's generated keys,
// "campaignkeys-<company>-<company>" (one per company, named as every
// stream is). It holds one KeyGenerated per generated key: its version
// orders the generations, so two concurrent creations never take the
// same number.
func KeysStream(companyID string) string {
	return domain.StreamID("campaignkeys", companyID, companyID)
}
