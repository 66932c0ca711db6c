package imports

import (
	"errors"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// nestedRoots lists, per entity, the fields whose CSV columns address
// nested objects with dotted paths ("versions.language.fi.title"), each
// with the number of segments below it that are object keys whatever
// they look like: versions is keyed by dimension, then by language code
// or shop id, and a shop id is often a number ("versions.shop_id.7.price"
// is shop 7's price, not a list). In any other column a dot is part of
// the key ("mailing_lists.add" is one key), and only numeric segments
// build lists ("tags.0", "stock.0.shop_id").
var nestedRoots = map[importing.Entity]map[string]int{
	importing.Products: {"versions": 2, "stock": 0},
}

// UploadShape is what the decoders of an upload body (ingest.NewRecords)
// need to know of the records of entity.
func UploadShape(entity importing.Entity) ingest.Shape {
	return ingest.Shape{Name: string(entity), Nested: nestedRoots[entity]}
}

// UploadError returns err as the domain's error when it is the decoders'
// refusal of an upload body (*ingest.Error): a record over the limit is
// domain.TooLarge, any other refusal domain.Invalid, with the decoders'
// words. Any other error is returned as it is. It is the one place that
// maps ingest's refusals: StageUploadHandler and ParseContentType use it.
func UploadError(err error) error {
	var ie *ingest.Error
	if !errors.As(err, &ie) {
		return err
	}
	code := domain.Invalid
	if ie.TooLarge {
		code = domain.TooLarge
	}
	return &domain.Error{Code: code, Message: ie.Message}
}

// ParseContentType is ingest.ParseContentType for the edges: the format
// and the charset of an upload's Content-Type, with a refusal as the
// domain's error (UploadError).
func ParseContentType(contentType string) (ingest.Format, string, error) {
	format, charset, err := ingest.ParseContentType(contentType)
	return format, charset, UploadError(err)
}
