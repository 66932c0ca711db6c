package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/projections"
)

// TestMalformedDataIsPermanent: data that does not decode is the fault of
// its commit, whose company is parked, however json.Decoder words it:
// data cut short comes out of it as a bare io.ErrUnexpectedEOF, which
// pg.Transient reads as a connection dropped mid-reply, and which would
// stop the projector for every company, for ever.
func TestMalformedDataIsPermanent(t *testing.T) {
	for _, data := range []string{`{"name": "Acme`, `{"n": 1`, `{`, `[1, 2`, `{"a": x}`, `"text"`} {
		e := eventstore.RecordedEvent{Type: "ShopUpserted", StreamID: "shop-acme-1", StreamVersion: 1, Data: []byte(data)}
		var v map[string]any
		err := DecodeNumbersEvent(e, &v)
		if err == nil {
			t.Errorf("%s: decoded", data)
			continue
		}
		applied := fmt.Errorf("projections: shops: apply commit 7: %w", err)
		if errors.Is(applied, io.ErrUnexpectedEOF) || pg.Transient(applied) {
			t.Errorf("%s: %v reads as a dropped connection", data, applied)
		}
		if !projections.Permanent(applied) {
			t.Errorf("%s: %v is not permanent: it would stop the projector for every company", data, applied)
		}
	}
	var v map[string]any
	if err := DecodeNumbers([]byte(`{"n": 12345678901234567890.5}`), &v); err != nil || v["n"] != json.Number("12345678901234567890.5") {
		t.Errorf("decodeNumbers = %v, %v", v, err)
	}
}
