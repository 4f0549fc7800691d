"""An MCP client on the official Python SDK (`mcp` on PyPI): starts the
server command given on the command line over stdio, lists its tools,
calls each of them with the JSON arguments given, and prints one JSON
object: the tools' names and input schemas, and each call's text and error
flag. The Rust test judges what it prints."""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    calls = json.loads(sys.argv[1])
    command, *args = sys.argv[2:]
    params = StdioServerParameters(command=command, args=args, env=None)
    out = {"tools": {}, "calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name
            listed = await session.list_tools()
            for tool in listed.tools:
                schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
                out["tools"][tool.name] = schema
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                error = getattr(result, "is_error", None)
                if error is None:
                    error = getattr(result, "isError", False)
                out["calls"].append({"tool": name, "text": text, "error": bool(error)})
    print(json.dumps(out))


asyncio.run(main())
