"""The MCP server (issue 20): the capabilities as Model Context Protocol tools, at /mcp."""
