package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// loadSite reads --site; "" is no site file. A malformed file is a usage
// error listing its problems with file, line and field.
func loadSite(path string) (*site.Site, error) {
	if path == "" {
		return nil, nil
	}
	s, err := site.Load(path)
	if err != nil {
		return nil, usageError{err}
	}
	// The site's secret values join this process's environment, which
	// every masking of the run reads (redact.FromEnv): they reach each
	// rank, and so its output, the reports and the journal.
	for _, kv := range s.SecretEnv() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("site %s: env %s: %w", path, k, err)
		}
	}
	return s, nil
}

// siteSecrets are the secret values of the site file a command line names
// (--site FILE or --site=FILE), for the masking of what the command
// prints, which starts before the file is read for the run. A file that
// cannot be read gives none: the command reports it.
func siteSecrets(args []string) []string {
	var out []string
	for _, path := range flagValues(args, "site") {
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

// withSiteParams lays the site's parameters of the plugins and tests su
// runs under the command line's pm: a --param of the same key, scoped or
// not, wins. pm is changed and returned.
func withSiteParams(pm map[string]string, st *site.Site, su *sku.Suite) map[string]string {
	if st == nil {
		return pm
	}
	var scopes []string
	for _, t := range su.Tests {
		plugin, _, _ := strings.Cut(t.Test, ".")
		scopes = append(scopes, plugin, t.Test)
	}
	for k, v := range st.ParamsFor(scopes) {
		_, key, _ := strings.Cut(k, ":")
		if _, given := pm[k]; given {
			continue
		}
		if _, given := pm[key]; given {
			continue
		}
		pm[k] = v
	}
	return pm
}
