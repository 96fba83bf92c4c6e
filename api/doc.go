// Package api is the wire contract of the Bursar service: the request and
// answer bodies of every operation of `bursar serve`, the names the API
// spells classes, paths and request states with, and the RFC 9457 problem
// document every error answer carries.
//
// Both sides import it: the service (package service) registers these
// structs with its OpenAPI generator as they are, so their struct tags are
// at once the published schema and the validation applied to every
// request; the Go client (package client) sends and decodes the same
// structs. One definition shared by both is what keeps the client, the
// server and /openapi.json in step, without the server depending on the
// client.
package api
