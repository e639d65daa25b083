//! Support code for the integration tests: schema validation against the official MCP
//! schemas, and drivers that feed the engine and collect its output.

pub mod spec;
