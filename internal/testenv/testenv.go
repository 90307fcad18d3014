// Package testenv gives integration tests the services that
// scripts/testenv.sh started: it reads the variables that script wrote
// (loaded into the environment by scripts/test.sh) and skips the test when a
// service is missing, or fails it when GPUACCEPT_INTEGRATION=required (as
// .ci/run sets), so CI can never pass by skipping.
package testenv

import (
	"os"
	"testing"
)

// Required reports whether integration tests must fail instead of skipping
// when their service is missing (GPUACCEPT_INTEGRATION=required).
func Required() bool { return os.Getenv("GPUACCEPT_INTEGRATION") == "required" }

// Need returns the value of the environment variable name (written by
// scripts/testenv.sh up SERVICE); when it is unset it skips t, or fails it
// under GPUACCEPT_INTEGRATION=required. service names the testenv service
// that sets it, for the message.
func Need(t testing.TB, name, service string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Missing(t, "%s is unset: start the service with scripts/testenv.sh up %s (or run scripts/test.sh after it)", name, service)
	}
	return v
}

// Missing skips t with the formatted reason, or fails it under
// GPUACCEPT_INTEGRATION=required.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("integration service missing (GPUACCEPT_INTEGRATION=required): "+format, args...)
	}
	t.Skipf(format, args...)
}

// NeedPostgres returns the URL of the PostgreSQL superuser on the server
// the "postgres" service started (GPUACCEPT_TEST_POSTGRES), or skips t
// (fails it under GPUACCEPT_INTEGRATION=required) when it is not up.
// Tests make a database of their own through it.
func NeedPostgres(t testing.TB) string {
	t.Helper()
	return Need(t, "GPUACCEPT_TEST_POSTGRES", "postgres")
}
