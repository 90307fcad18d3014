// Package argmask sets up, from a command line before its flags are
// parsed, the masking of everything the command prints (framework/redact):
// the values of the process's secret variables, of the secret parameters
// the line gives (--param env.HF_TOKEN=...), of the secret env of the
// site files it names (--site FILE), and whatever of the line looks
// secret (--hosts admin:pw@host1), wherever they show.
package argmask

import (
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/site"
)

// FlagValues are the values a command line gives flag --name, as --name
// VALUE or --name=VALUE, anywhere (also after a "--": baseline record
// --repeat passes run flags there, whose secrets must be masked too): for
// what must be known before the flags are parsed (masking) or that a
// string flag would keep only the last of (a repeated --test).
func FlagValues(args []string, name string) []string {
	var out []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			out = append(out, v)
		} else if a == "--"+name && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// Masking is the masking of what the command of args prints, knowing
// environ (os.Environ()): an error quoting a piece of an argument is
// masked too.
func Masking(args, environ []string) *redact.Redactor {
	params := map[string]string{}
	var known []string
	for _, a := range args {
		known = append(known, redact.Secrets(a)...)
	}
	for _, v := range FlagValues(args, "param") {
		if k, val, found := strings.Cut(v, "="); found {
			params[k] = val
			known = append(known, redact.Secrets(val)...)
		}
	}
	known = append(known, siteSecrets(args)...)
	return redact.FromEnv(environ, params).With(known...)
}

// siteSecrets are the secret values of the site files args name (--site
// FILE or --site=FILE), known before the file is read for the run. A file
// that cannot be read gives none: the command reports it.
func siteSecrets(args []string) []string {
	var out []string
	for _, path := range FlagValues(args, "site") {
		s, err := site.Load(path)
		if err != nil {
			continue
		}
		for _, kv := range s.SecretEnv() {
			_, v, _ := strings.Cut(kv, "=")
			out = append(out, v)
		}
	}
	return out
}
