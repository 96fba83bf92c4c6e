// Package pollcrowd is a crowd of long polls and an operator counting its
// answers, for the tests that show a tenant's long polls cannot lock the
// operator out of the service (issue 34 §1; docs/service.md, "Long polls
// and the operator's share"). Only tests import it.
package pollcrowd
