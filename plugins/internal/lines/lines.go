// Package lines reads a tool's output line by line with a bound on what
// one line may hold, so that a hostile output of gigabytes on one line
// costs the reader no more than the bound. The health, trainlog, train and
// workload readers share it.
package lines

import (
	"bufio"
	"io"
)

// Each calls fn for each line of r, numbered from 1, without its line end
// ("\n" or "\r\n"). Of a line longer than max bytes the first max are
// given and cut is true. line is reused after fn returns: fn copies what
// it keeps. A last line without a line end is a line. Each returns r's
// first error other than io.EOF.
func Each(r io.Reader, max int, fn func(line []byte, no int, cut bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	no := 0
	var buf []byte
	cut := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || isPrefix || err == nil {
			if room := max - len(buf); room > 0 {
				if len(chunk) > room {
					chunk, cut = chunk[:room], true
				}
				buf = append(buf, chunk...)
			} else if len(chunk) > 0 {
				cut = true
			}
			if !isPrefix && err == nil {
				no++
				fn(buf, no, cut)
				buf, cut = buf[:0], false
			}
		}
		if err == io.EOF {
			if len(buf) > 0 {
				no++
				fn(buf, no, cut)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}
