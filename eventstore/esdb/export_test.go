package esdb

// OnStep calls fn at each step of the store's commits ("prepared": the
// PostgreSQL transaction is prepared, the record not appended yet;
// "appended": the record is appended, the transaction not committed
// yet); fn returning true stops the commit there with ErrCrashed, as if
// the process died. fn may also block, as a slow writer.
func (c *Coupled) OnStep(fn func(step string) bool) { c.crash = fn }

// ErrCrashed is the error of a commit stopped by OnStep.
var ErrCrashed = errCrashed
