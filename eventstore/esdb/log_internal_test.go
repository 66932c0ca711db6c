package esdb

import "testing"

// TestDataID checks the "id" EachEventRecorded matches: a JSON number
// equal to an integer, as PostgreSQL's jsonb compares it.
func TestDataID(t *testing.T) {
	tests := []struct {
		name string
		data string
		id   int64
		ok   bool
	}{
		{"integer", `{"id": 7}`, 7, true},
		{"negative", `{"id": -7}`, -7, true},
		{"float equal to an integer", `{"id": 7.0}`, 7, true},
		{"exponent", `{"id": 7e2}`, 700, true},
		{"fraction", `{"id": 7.5}`, 0, false},
		{"string", `{"id": "7"}`, 0, false},
		{"null", `{"id": null}`, 0, false},
		{"absent", `{"customer_id": "k"}`, 0, false},
		{"beyond int64", `{"id": 99999999999999999999}`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok, err := dataID([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if id != tt.id || ok != tt.ok {
				t.Errorf("dataID(%s) = %d, %v, want %d, %v", tt.data, id, ok, tt.id, tt.ok)
			}
		})
	}
	if _, _, err := dataID([]byte(`not json`)); err == nil {
		t.Error("dataID of data that is not JSON: no error")
	}
}
