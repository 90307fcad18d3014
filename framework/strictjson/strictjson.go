// Package strictjson finds what encoding/json reads without a word but
// other readers read otherwise: an object that gives a key twice
// ({"status": "pass", "status": "fail"}: Go keeps the last value, some
// readers the first, a reviewer's eye whichever it meets first). The
// files a sign-off rests on (results.json, journal lines, manifest.json)
// are held to one value per key.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrDuplicateKey is what DuplicateKey's error for a key given twice
// wraps; a malformed document's error does not.
var ErrDuplicateKey = errors.New("duplicate key")

// frame is an object or array being read: its path, and for an object
// the keys seen and whether the next token is a key.
type frame struct {
	path   string
	object bool
	keys   map[string]bool
	key    bool   // object: the next token is a key
	last   string // object: the key whose value comes next
	index  int    // array: the index of the next element
}

// DuplicateKey reads the first JSON document of data and returns an
// error naming the first key an object gives twice and where
// ("duplicate key "status" in tests[0]", the path from the document's
// root); nil when there is none. Malformed JSON is an error too (the
// decoder's), so that a caller may check before decoding.
func DuplicateKey(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil // the first document has been read
			}
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			k, _ := tok.(string)
			if top.keys[k] {
				where := top.path
				if where == "" {
					where = "the top-level object"
				}
				return fmt.Errorf("%w %s in %s: readers disagree on which value counts", ErrDuplicateKey, strconv.Quote(k), where)
			}
			top.keys[k] = true
			top.key, top.last = false, k
			continue
		}
		// A value: its path is under top's.
		path := ""
		if top != nil {
			if top.object {
				path = join(top.path, top.last)
				top.key = true
			} else {
				path = fmt.Sprintf("%s[%d]", top.path, top.index)
				top.index++
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{path: path, object: true, keys: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		default:
			if len(stack) == 0 {
				return nil // a document of one scalar
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
