package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

// newDatatarget creates a company and a messages datatarget in it.
func mustDatatarget(t *testing.T, cmds commands.Commands) (access.Principal, datatarget.Datatarget) {
	t.Helper()
	ctx := context.Background()
	co := mustCompany(t, cmds, "acme")
	p := access.System(co.ID)
	d, err := cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	return p, d
}

func testMessages(n, from int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"n": %d}`, from+i))
	}
	return out
}

// TestPostNumbersConcurrently: posters racing on one datatarget get
// consecutive, disjoint ranges that cover 1..N, on every adapter.
func TestPostNumbersConcurrently(t *testing.T) {
	for name, open := range adapters() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			cmds := commands.New(store, func() time.Time { return now })
			p, d := mustDatatarget(t, cmds)
			const posters, posts, size = 8, 20, 3
			var mu sync.Mutex
			var firsts []int64
			var wg sync.WaitGroup
			for range posters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range posts {
						got, err := cmds.PostDatatargetMessages.Handle(context.Background(), commands.PostDatatargetMessages{
							Principal: p, DatatargetID: d.ID, Messages: testMessages(size, 0),
						})
						if err != nil || got.MessagesCount != size {
							t.Errorf("post: %+v %v", got, err)
							return
						}
						mu.Lock()
						firsts = append(firsts, got.FirstMessageNumber)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
			for i, f := range firsts {
				if want := int64(i*size + 1); f != want {
					t.Fatalf("post %d starts at %d, want %d", i, f, want)
				}
			}
			evs, err := store.ReadStream(context.Background(), datatarget.MessagesStream(p.CompanyID, d.ID), 0)
			if err != nil || len(evs) != posters*posts*size {
				t.Fatalf("%d message events, %v", len(evs), err)
			}
		})
	}
}

func TestPostRejects(t *testing.T) {
	cmds, _ := newCommands(t)
	p, d := mustDatatarget(t, cmds)
	ctx := context.Background()
	tests := []struct {
		name string
		cmd  commands.PostDatatargetMessages
		want domain.Code
	}{
		{"empty", commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID}, domain.Validation},
		{"not objects", commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: []json.RawMessage{json.RawMessage(`[]`)}}, domain.Validation},
		{"unknown datatarget", commands.PostDatatargetMessages{Principal: p, DatatargetID: "nope", Messages: testMessages(1, 0)}, domain.NotFound},
		{"other company", commands.PostDatatargetMessages{Principal: access.System("other"), DatatargetID: d.ID, Messages: testMessages(1, 0)}, domain.NotFound},
	}
	for _, tt := range tests {
		if _, err := cmds.PostDatatargetMessages.Handle(ctx, tt.cmd); domain.ErrorCode(err) != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}
