package console

// MaxSessionsPerUser is maxSessionsPerUser, for the tests of package
// console_test.
const MaxSessionsPerUser = maxSessionsPerUser
