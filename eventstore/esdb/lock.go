package esdb

// AppendLockKey is the PostgreSQL advisory lock that orders the commits of
// a Store coupled with PostgreSQL (WithPostgres) against a pause of all
// appends: every commit takes it shared, in its PostgreSQL transaction,
// before that transaction is prepared (so a prepared commit keeps it
// until it is decided); a pause takes it exclusive (Log.LockAppends), and
// then waits for every commit already prepared to end.
const AppendLockKey int64 = 0x636c69656e74_01 // "client" + 1

// companyLockClass is the class of the PostgreSQL advisory locks (two-key
// form: class, hashtext(company id)) that order the commits of one
// company made by a Store coupled with PostgreSQL, on any node.
const companyLockClass int32 = 0x65736462 // "esdb"
