package campaign

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkUnknownFieldFlood: a 10 MB body of unknown fields, refused.
func BenchmarkUnknownFieldFlood(b *testing.B) {
	var s strings.Builder
	s.WriteByte('{')
	for i := 0; s.Len() < 10_000_000; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(`"f` + strconv.Itoa(i) + `":1`)
	}
	s.WriteByte('}')
	raw := []byte(s.String())
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ParseInput(raw, time.UTC); err == nil {
			b.Fatal("accepted")
		}
	}
}
