package ingest_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

func TestCSVRecords(t *testing.T) {
	for name, tc := range map[string]struct {
		entity  importing.Entity
		charset string
		body    string
		want    []string
	}{
		"comma": {body: "external_id,email\r\nA1,a@x.test\r\nA2,b@x.test\r\n",
			want: []string{`{"external_id":"A1","email":"a@x.test"}`, `{"external_id":"A2","email":"b@x.test"}`}},
		"semicolon": {body: "external_id;first_name\nA1;Anna, Maria\n",
			want: []string{`{"external_id":"A1","first_name":"Anna, Maria"}`}},
		"tab": {body: "external_id\tcity\nA1\tTurku; Finland\n",
			want: []string{`{"external_id":"A1","city":"Turku; Finland"}`}},
		"quoted delimiters in header do not count": {body: "\"a,b\";c\n1;2\n",
			want: []string{`{"a,b":"1","c":"2"}`}},
		"single column": {body: "email\nx@y.test\n", want: []string{`{"email":"x@y.test"}`}},
		"empty cells are absent": {body: "a,b,c\n1,,3\n,,\n",
			want: []string{`{"a":"1","c":"3"}`, `{}`}},
		"short row lacks the last cells": {body: "a,b,c\n1,2\n", want: []string{`{"a":"1","b":"2"}`}},
		"quoted line break and quotes": {body: "a,b\n\"x\ny\",\"say \"\"hi\"\"\"\n",
			want: []string{`{"a":"x\ny","b":"say \"hi\""}`}},
		"control characters escaped": {body: "a\n\"x\ty\x01\\\"\n", want: []string{`{"a":"x\ty\u0001\\"}`}},
		"lists from numeric segments": {body: "id,tags.0,tags.1,tags.2\n1,a,,c\n2,,,\n",
			want: []string{`{"id":"1","tags":["a","c"]}`, `{"id":"2"}`}},
		"dotted keys stay literal": {body: "id,mailing_lists.add,mailing_lists.remove.0,COMPANY__x.y\n1,news,promo,z\n",
			want: []string{`{"id":"1","mailing_lists.add":"news","mailing_lists.remove":["promo"],"COMPANY__x.y":"z"}`}},
		"objects in lists": {body: "product_id,stock.0.shop_id,stock.0.quantity,stock.1.shop_id,stock.1.quantity\n55,s1,1,,\n",
			entity: importing.Products,
			want:   []string{`{"product_id":"55","stock":[{"shop_id":"s1","quantity":"1"}]}`}},
		"nested roots of the entity": {body: "product_id,versions.language.fi.title,versions.language.en.title\n55,Kenkä,Shoe\n",
			entity: importing.Products,
			want:   []string{`{"product_id":"55","versions":{"language":{"fi":{"title":"Kenkä"},"en":{"title":"Shoe"}}}}`}},
		"not nested for another entity": {body: "versions.language.fi.title\nx\n",
			want: []string{`{"versions.language.fi.title":"x"}`}},
		"header spaces trimmed": {body: " a , b \n1,2\n", want: []string{`{"a":"1","b":"2"}`}},
		"header only":           {body: "a,b\n", want: nil},
		"utf-8 bom":             {body: "\xEF\xBB\xBFa\nä\n", want: []string{`{"a":"ä"}`}},
		"utf-16le bom":          {body: utf16le("a;b\r\nä;€\r\n", true), want: []string{`{"a":"ä","b":"€"}`}},
		"utf-16 charset":        {charset: "UTF-16", body: utf16be("a\nä\n"), want: []string{`{"a":"ä"}`}},
		"utf-16le charset":      {charset: "utf-16le", body: utf16le("a\nä\n", false), want: []string{`{"a":"ä"}`}},
		"iso-8859-1":            {charset: "ISO-8859-1", body: "a\n\xe4\x80\n", want: []string{`{"a":"ä€"}`}},
		"lone CR line ends":     {body: "a;b\r1;2\r3;4\r", want: []string{`{"a":"1","b":"2"}`, `{"a":"3","b":"4"}`}},
		"lone CR, no final line end": {body: "a,b\r1,2\r3,4",
			want: []string{`{"a":"1","b":"2"}`, `{"a":"3","b":"4"}`}},
		"lone CR with a quoted line break": {body: "a,b\r\"x\ry\",2\r3,\"q\r\n\"\r",
			want: []string{`{"a":"x\ny","b":"2"}`, `{"a":"3","b":"q\n"}`}},
		"mixed line ends": {body: "a,b\r\n1,2\n3,4\r5,6\r\n\r7,8",
			want: []string{`{"a":"1","b":"2"}`, `{"a":"3","b":"4"}`, `{"a":"5","b":"6"}`, `{"a":"7","b":"8"}`}},
		"CRLF, no final line end":     {body: "a,b\r\n1,2\r\n3,4", want: []string{`{"a":"1","b":"2"}`, `{"a":"3","b":"4"}`}},
		"one line, no line end":       {body: "a,b", want: nil},
		"lone CR, utf-16le":           {body: utf16le("a;b\rä;€\r", true), want: []string{`{"a":"ä","b":"€"}`}},
		"lone CR delimiter inference": {body: "a;b\r1,5;2,5\r", want: []string{`{"a":"1,5","b":"2,5"}`}},
	} {
		t.Run(name, func(t *testing.T) {
			e := tc.entity
			if e == "" {
				e = importing.Customers
			}
			got, err := readAll(t, strings.NewReader(tc.body), ingest.CSV, tc.charset, e, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCSVRecordsInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		charset, body, msg string
	}{
		"empty body":        {body: "", msg: "empty"},
		"blank header":      {body: ",,\n1,2,3\n", msg: "no column names"},
		"unnamed column":    {body: "a,,c\n1,2,3\n", msg: "column 2 of the CSV header has no name"},
		"duplicate column":  {body: "a,b,a\n1,2,3\n", msg: `"a" and "a"`},
		"leaf and list":     {body: "tags,tags.0\nx,y\n", msg: `"tags" and "tags.0"`},
		"list and object":   {body: "stock.0,stock.x\n1,2\n", msg: `"stock.0" and "stock.x"`},
		"empty segment":     {body: "stock..x\n1\n", msg: "empty path segment"},
		"too many cells":    {body: "a,b\n1,2,3\n", msg: "line 2 (record 0) has 3 cells"},
		"bare quote":        {body: "a,b\n1,x\"y\n", msg: "CSV line 2"},
		"unclosed quote":    {body: "a\n\"x\n", msg: "CSV line 2"},
		"invalid utf-8":     {body: "a\n\xe4\n", msg: "charset=iso-8859-1"},
		"unknown charset":   {charset: "ebcdic", body: "a\n1\n", msg: `unknown charset "ebcdic"`},
		"invalid header":    {body: "\xe4\n1\n", msg: "header is not valid UTF-8"},
		"empty after BOM":   {body: "\xEF\xBB\xBF", msg: "empty"},
		"only blank lines":  {body: "\n\n\n", msg: "empty"},
		"index far too big": {body: "tags.99999999\nx\n", msg: "out of range"},
	} {
		t.Run(name, func(t *testing.T) {
			e := importing.Customers
			if strings.HasPrefix(tc.body, "stock") {
				e = importing.Products
			}
			_, err := readAll(t, strings.NewReader(tc.body), ingest.CSV, tc.charset, e, ingest.Limits{})
			if domain.ErrorCode(err) != domain.Invalid || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want invalid_request containing %q", err, tc.msg)
			}
		})
	}
}

func TestParseContentType(t *testing.T) {
	for ct, want := range map[string]struct {
		format  ingest.Format
		charset string
	}{
		"":                                  {ingest.JSON, ""},
		"application/json":                  {ingest.JSON, ""},
		"application/json; charset=UTF-8":   {ingest.JSON, "UTF-8"},
		"application/vnd.api+json":          {ingest.JSON, ""},
		"text/csv":                          {ingest.CSV, ""},
		"text/csv; charset=utf-16":          {ingest.CSV, "utf-16"},
		"application/csv;charset=latin1":    {ingest.CSV, "latin1"},
		"Text/CSV; Charset=\"iso-8859-1\"":  {ingest.CSV, "iso-8859-1"},
		"text/comma-separated-values":       {ingest.CSV, ""},
		"text/json; charset=utf-8; x=ignor": {ingest.JSON, "utf-8"},
	} {
		f, cs, err := ingest.ParseContentType(ct)
		if err != nil || f != want.format || cs != want.charset {
			t.Errorf("%q: %q %q %v, want %q %q", ct, f, cs, err, want.format, want.charset)
		}
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/csv; charset"} {
		if _, _, err := ingest.ParseContentType(ct); domain.ErrorCode(imports.UploadError(err)) != domain.Invalid {
			t.Errorf("%q: error %v, want invalid_request", ct, err)
		}
	}
}

// TestCSVLineEndsAcrossReads reads CR, CRLF and LF files one byte at a
// time and in one piece: a CR at the end of what one read returned must
// wait for the next byte to know whether it ends the line alone.
func TestCSVLineEndsAcrossReads(t *testing.T) {
	var want []string
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf("E%d,\"a\rb\"", i))
		want = append(want, fmt.Sprintf(`{"external_id":"E%d","note":"a\nb"}`, i))
	}
	for name, end := range map[string]string{"CR": "\r", "CRLF": "\r\n", "LF": "\n"} {
		body := "external_id,note" + end + strings.Join(lines, end) + end
		for how, r := range map[string]io.Reader{"whole": strings.NewReader(body), "byte by byte": iotest.OneByteReader(strings.NewReader(body))} {
			t.Run(name+" "+how, func(t *testing.T) {
				got, err := readAll(t, r, ingest.CSV, "", importing.Customers, ingest.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("records (-want +got):\n%s", diff)
				}
			})
		}
	}
}
