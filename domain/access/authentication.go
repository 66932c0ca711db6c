package access

import "github.com/clientele/clientele/domain"

// InvalidToken is the one answer to every access token that does not
// authenticate, whatever the reason (unknown, another company's, owned by
// a disabled integration, not a token at all), so that a caller learns
// nothing about other companies' tokens.
func InvalidToken() error { return domain.Errorf(domain.Unauthorized, "invalid access token") }

// InvalidLogIn is the one answer to every password log-in that fails:
// unknown user, wrong password, missing, wrong or already used TOTP code.
// Telling them apart would confirm a password to whoever guesses it.
func InvalidLogIn() error {
	return domain.Errorf(domain.Unauthorized, "invalid email, password or two-factor code (users with two-factor authentication send the current code in the Clientele-TOTP-Code header)")
}

// MaxConsoleSessionsPerUser bounds a user's live console sessions (a
// browser each): a log-in beyond it ends the user's oldest session, so
// that a user logging in again and again keeps a bounded number.
const MaxConsoleSessionsPerUser = 10

// ConsoleSessionLength is the length of a console session's value (32
// random bytes in unpadded base64url): a value of another length is no
// session, and need not be looked up.
const ConsoleSessionLength = 43
