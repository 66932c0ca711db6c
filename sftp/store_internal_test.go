package sftp

import (
	"errors"
	"log/slog"
	"os"
	"testing"
)

// TestSFTPQueueAddCommittedNotSynced: once a file is renamed into the
// queue it is imported, even if syncing the queue then fails: it is
// queued now (not only at the next start), and the client is told it
// arrived, lest it send it again and have it imported twice.
func TestSFTPQueueAddCommittedNotSynced(t *testing.T) {
	st, err := openStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	q, err := newQueue(&Server{log: slog.New(slog.DiscardHandler), store: st})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	syncDir = func(dir string) error {
		// The first sync is the job's, the second the queue's after the
		// file's rename.
		if calls++; calls == 2 {
			return errors.New("input/output error")
		}
		return syncDirFS(dir)
	}
	defer func() { syncDir = syncDirFS }()
	j := job{ID: "01a", CompanyID: "c1", Name: "customers.csv"}
	from := st.incoming(j.ID)
	if err := os.WriteFile(from, []byte("customer_id\nC1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := q.add(j, from); err != nil {
		t.Errorf("add: %v, want the file taken (it is committed)", err)
	}
	if got := q.of("c1"); len(got) != 1 || got[0].ID != j.ID {
		t.Errorf("queued %v", got)
	}
	if _, err := os.Stat(st.queued(j.ID)); err != nil {
		t.Errorf("the file is not in the queue: %v", err)
	}
}
