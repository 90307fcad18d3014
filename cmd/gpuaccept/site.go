package main

import (
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
	return s, nil
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
