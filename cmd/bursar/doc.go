// Command bursar runs the Bursar broker as a live service and talks to it.
//
//	bursar serve            serve the broker over HTTP in real time
//	bursar demo             an agent that negotiates the full loop with a server
//	bursar demo --selftest  the same against an in-process server, checked
//
// The broker itself is package policy; the HTTP service is package service,
// its typed client package client. `bursar --help` and `bursar serve
// --help` explain every flag; docs/service.md explains the API, the security
// model and the durability guarantee.
package main
