# Service "report": the tools the report tests check gpuaccept's reports
# with: xmllint (Debian libxml2-utils) validates the JUnit XML against
# junit-10.xsd, headless Chromium renders the HTML report for a screenshot.
# No daemon. Sourced by scripts/testenv.sh.
up_report() {
	need_apt libxml2-utils chromium
	setenv GPUACCEPT_XMLLINT "$(command -v xmllint)"
	setenv GPUACCEPT_CHROMIUM "$(command -v chromium)"
}
