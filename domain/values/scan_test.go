package values_test

import (
	"testing"

	"github.com/clientele/clientele/domain/values"
)

func TestValueEnd(t *testing.T) {
	for _, c := range []struct {
		text string
		at   int
		want string // the value read
	}{
		{`"a\"b" ,`, 0, `"a\"b"`},
		{`{"a": [1, "]", {"b": "}"}]}, 2`, 0, `{"a": [1, "]", {"b": "}"}]}`},
		{`[[[`, 0, `[[[`}, // does not end
		{`12.5e3}`, 0, `12.5e3`},
		{`true,false`, 5, `false`},
		{`null`, 4, ``},
		{`"open`, 0, `"open`},
	} {
		if got := c.text[c.at:values.ValueEnd([]byte(c.text), c.at)]; got != c.want {
			t.Errorf("ValueEnd(%q, %d) reads %q, want %q", c.text, c.at, got, c.want)
		}
	}
	if i := values.SkipSpace([]byte(" \t\r\n x"), 0); i != 5 {
		t.Errorf("SkipSpace: %d, want 5", i)
	}
}
