package imports

import "context"

// DiscardUnscheduled deletes the run runID and its chunks if it is still
// receiving: what a process killed while staging an upload left, before
// the upload is staged again under the same run id (the SFTP drop
// directory records a file's run id before staging it, so that the file
// is imported once). A scheduled run is left alone.
func (s *Store) DiscardUnscheduled(ctx context.Context, runID string) error {
	return s.discard(ctx, runID)
}
