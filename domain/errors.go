// Package domain holds what every aggregate package shares: the typed
// error that the API edge maps to an HTTP status, the format of stream
// names, and small value types.
// It imports only the standard library.
package domain

import (
	"errors"
	"fmt"
)

// Code classifies an error. The API maps each code to one HTTP status, in
// one place (api/errors.go).
type Code string

// Error codes. The strings are the "code" of the error body.
const (
	// Invalid: the request as a whole is malformed (400).
	Invalid Code = "invalid_request"
	// Validation: a well-formed request breaks a rule (422).
	Validation Code = "validation_error"
	// Unauthorized: missing or invalid credentials (401).
	Unauthorized Code = "unauthorized"
	// Forbidden: valid credentials without the permission (403).
	Forbidden Code = "forbidden"
	// NotFound: no such resource (404).
	NotFound Code = "not_found"
	// MethodNotAllowed: the resource exists but not with this method (405).
	MethodNotAllowed Code = "method_not_allowed"
	// Conflict: a concurrent change or a duplicate (409).
	Conflict Code = "conflict"
	// Gone: what was asked for existed but is no longer kept (410), as
	// the messages of a datatarget pruned after its retention.
	Gone Code = "gone"
	// TooLarge: the request body is over the limit (413).
	TooLarge Code = "request_too_large"
	// RateLimited: too many requests (429).
	RateLimited Code = "rate_limited"
	// Unavailable: the same request succeeds later; the service cannot
	// serve it now (its database is away, or it is not ready yet) (503).
	Unavailable Code = "unavailable"
	// Internal: a failure on our side (500).
	Internal Code = "internal_error"
)

// FieldError is one problem with one field.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is a domain error with a code, a message for the client, and
// optional per-field details.
type Error struct {
	Code    Code
	Message string
	Details []FieldError
	// More counts the problems found beyond Details (Problems keeps the
	// first MaxDetails); the answer says how many (CapDetails).
	More int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, Internal
// for any other error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the client-facing message of err: the message of
// its *Error, or a generic text for internal errors (never their details).
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// MaxDetails bounds the details of one error: an answer lists the first
// MaxDetails problems and then one more detail that counts the rest
// (CapDetails), so that a body of a million unknown keys is answered in
// a few kilobytes, not a million details.
const MaxDetails = 100

// CapDetails is details as an answer lists them (api/errors.go, the one
// place): all of them when there are at most MaxDetails and no more,
// else the first MaxDetails and a last detail, of no field, saying how
// many more there are. more counts problems that were found but not
// kept (Error.More).
func CapDetails(details []FieldError, more int) []FieldError {
	if len(details) > MaxDetails {
		more += len(details) - MaxDetails
		details = details[:MaxDetails]
	}
	if more == 0 {
		return details
	}
	return append(details[:len(details):len(details)], FieldError{Field: "",
		Reason: fmt.Sprintf("and %d more problems like these: only the first %d are listed", more, MaxDetails)})
}

// Problems collects the problems of one validation, keeping the first
// MaxDetails and counting the rest, so that what a request costs to
// refuse is bounded by its size, never by how many problems it holds.
// The zero value is ready to use.
type Problems struct {
	kept []FieldError
	more int
}

// Add records a problem.
func (p *Problems) Add(field, reason string) {
	if len(p.kept) < MaxDetails {
		p.kept = append(p.kept, FieldError{Field: field, Reason: reason})
		return
	}
	p.more++
}

// Len is the number of problems recorded, kept or counted.
func (p *Problems) Len() int { return len(p.kept) + p.more }

// Full reports whether a further problem would only be counted: a
// validation that needs no count may stop there.
func (p *Problems) Full() bool { return len(p.kept) >= MaxDetails }

// Err is nil without problems, else an *Error of code and message whose
// Details are the problems kept and More the count of the others.
func (p *Problems) Err(code Code, message string) error {
	if p.Len() == 0 {
		return nil
	}
	return &Error{Code: code, Message: message, Details: p.kept, More: p.more}
}
