package access

import "github.com/clientele/clientele/domain"

// UserStream is a user's stream, "user-<company>-<user id>".
func UserStream(companyID, userID string) string {
	return domain.StreamID("user", companyID, userID)
}

// UserEmailStream is the reservation stream of an email within a
// company, "useremail-<company>-<email>": creating it expects no stream
// yet, which keeps emails unique in the company.
func UserEmailStream(companyID, email string) string {
	return domain.StreamID("useremail", companyID, email)
}

// IntegrationStream is an integration's stream,
// "integration-<company>-<integration id>".
func IntegrationStream(companyID, integrationID string) string {
	return domain.StreamID("integration", companyID, integrationID)
}

// TokenStream is an access token's stream,
// "accesstoken-<company>-<token id>".
func TokenStream(companyID, tokenID string) string {
	return domain.StreamID("accesstoken", companyID, tokenID)
}

// SFTPKeyStream is an SFTP key's stream, "sftpkey-<company>-<key id>".
func SFTPKeyStream(companyID, keyID string) string {
	return domain.StreamID("sftpkey", companyID, keyID)
}
