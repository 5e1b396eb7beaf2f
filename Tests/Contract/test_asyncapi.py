"""docs/asyncapi.yaml is well formed: it parses, every $ref resolves, every schema is a draft 2020-12 schema, and
it has a channel for every topic of docs/contract.md's table."""

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import contract

DOCUMENT = contract.load_asyncapi()
REQUIRED_SCHEMAS = ["subscribe", "unsubscribe", "stock", "alert", "subscriptions", "error", "inventory", "status", "bare-sku"]


def refs(node, path="#"):
    """Every ($ref, where) in a parsed document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value, path
            else:
                yield from refs(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from refs(value, f"{path}/{index}")


def test_is_asyncapi_3():
    assert DOCUMENT["asyncapi"] == "3.0.0"
    assert DOCUMENT["info"]["title"] and DOCUMENT["info"]["version"]
    for name in ("servers", "channels", "operations", "components"):
        assert DOCUMENT[name], f"{name} is empty"


def test_every_ref_resolves():
    registry = contract.schema_registry()
    checked = 0
    for ref, where in refs(DOCUMENT):
        if ref.startswith("#"):
            try:
                contract.resolve_pointer(DOCUMENT, ref)
            except (KeyError, IndexError, ValueError):
                pytest.fail(f"{where}: {ref} does not resolve in asyncapi.yaml")
        else:
            file, _, fragment = ref.partition("#")
            target = contract.DOCS / file
            assert target.is_file(), f"{where}: {ref}: no file {target}"
            if fragment:
                contract.resolve_pointer(json.loads(target.read_text()), fragment)
        checked += 1
    for path in sorted(contract.SCHEMAS.glob("*.json")):
        resolver = registry.resolver(path.name)
        for ref, where in refs(json.loads(path.read_text())):
            resolver.lookup(ref)  # raises when it does not resolve
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("path", sorted(contract.SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_schema_is_draft_2020_12(path):
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_every_message_has_its_schema():
    used = set()
    for message in DOCUMENT["components"]["messages"].values():
        payload = message["payload"]
        assert payload["schemaFormat"] == "application/schema+json;version=draft-2020-12"
        used.add(Path(payload["schema"]["$ref"]).stem)
    assert set(REQUIRED_SCHEMAS) <= used, f"no message uses {set(REQUIRED_SCHEMAS) - used}"


def test_every_topic_of_the_contract_is_a_channel():
    topics = contract.contract_topics()
    assert len(topics) >= 9, f"docs/contract.md's topic table not found or short: {topics}"
    addresses = {contract.deref(DOCUMENT, c)["address"] for c in DOCUMENT["channels"].values()}
    missing = [t for t in topics if t not in addresses]
    assert not missing, f"topics of docs/contract.md with no channel in docs/asyncapi.yaml: {missing}"
    undocumented = sorted(addresses - set(topics))
    assert not undocumented, f"channels of docs/asyncapi.yaml missing from docs/contract.md's table: {undocumented}"


def test_channels_declare_their_parameters_and_operations_use_their_channels_messages():
    for name, raw in DOCUMENT["channels"].items():
        channel = contract.deref(DOCUMENT, raw)
        in_address = set(re.findall(r"\{([^}]+)\}", channel["address"]))
        assert in_address == set(channel.get("parameters", {})), f"channel {name}: parameters and address disagree"
        assert in_address <= {"store", "customer", "sku", "reply"}
        assert channel["address"].startswith("restock/{store}/")
    for name, operation in DOCUMENT["operations"].items():
        assert operation["action"] in ("send", "receive"), name
        channel_ref = operation["channel"]["$ref"]
        for message in operation["messages"]:
            assert message["$ref"].startswith(channel_ref + "/messages/"), f"operation {name}: {message['$ref']}"
        mqtt = operation["bindings"]["mqtt"]
        assert mqtt["qos"] in (0, 1, 2) and isinstance(mqtt["retain"], bool), name
        assert {t["name"] for t in operation["tags"]} <= {"store", "customer", "admin"}, name
    model = contract.Contract()
    for channel in model.channels:
        channel.binding()  # one QoS and retain flag per channel
        assert channel.sent_by("store") != any(c for c in channel.bindings if c[0] == "send" and "store" not in c[1]), (
            f"{channel.address}: written by the store and by someone else")


def test_message_examples_match_their_schemas():
    model = contract.Contract()
    for channel in model.channels:
        for message in channel.messages:
            raw = contract.deref(DOCUMENT, DOCUMENT["channels"][channel.name]["messages"][message.name])
            assert raw.get("examples"), f"{message.name} has no example"
            for example in raw["examples"]:
                assert not model.errors(message.schema, example["payload"]), f"{message.name}: {example}"


def test_error_codes_of_the_contract_are_the_schemas():
    codes = contract.contract_error_codes()
    assert codes and codes == contract.load_schema("error.json")["properties"]["error"]["enum"]


# The fields AsyncAPI 3.0.0 allows on each object this document uses (and the MQTT bindings 0.2.0), so that a
# misspelt field fails here instead of being ignored by every tool. `x-` extensions are allowed everywhere.
ALLOWED = {
    "root": {"asyncapi", "id", "info", "servers", "defaultContentType", "channels", "operations", "components"},
    "info": {"title", "version", "description", "termsOfService", "contact", "license", "tags", "externalDocs"},
    "server": {"host", "protocol", "protocolVersion", "pathname", "description", "title", "summary", "variables",
               "security", "tags", "externalDocs", "bindings"},
    "server mqtt binding": {"clientId", "cleanSession", "lastWill", "keepAlive", "sessionExpiryInterval",
                            "maximumPacketSize", "bindingVersion"},
    "channel": {"address", "messages", "title", "summary", "description", "servers", "parameters", "tags",
                "externalDocs", "bindings"},
    "operation": {"action", "channel", "title", "summary", "description", "security", "tags", "externalDocs",
                  "bindings", "traits", "messages", "reply"},
    "operation mqtt binding": {"qos", "retain", "messageExpiryInterval", "bindingVersion"},
    "message": {"headers", "payload", "correlationId", "contentType", "name", "title", "summary", "description",
                "tags", "externalDocs", "bindings", "examples", "traits"},
    "multi-format schema": {"schemaFormat", "schema"},
    "message example": {"headers", "payload", "name", "summary"},
    "parameter": {"enum", "default", "description", "examples", "location"},
    "components": {"schemas", "servers", "channels", "operations", "messages", "securitySchemes", "serverVariables",
                   "parameters", "correlationIds", "replies", "replyAddresses", "externalDocs", "tags",
                   "operationTraits", "messageTraits", "serverBindings", "channelBindings", "operationBindings",
                   "messageBindings"},
}


def unknown(kind, node):
    return {key for key in node if not key.startswith("x-")} - ALLOWED[kind]


def test_every_object_has_only_fields_asyncapi_3_defines():
    problems = []
    check = lambda kind, node, where: problems.extend(f"{where}: {kind} has {sorted(k)}" for k in [unknown(kind, node)] if k)
    check("root", DOCUMENT, "#")
    check("info", DOCUMENT["info"], "#/info")
    check("components", DOCUMENT["components"], "#/components")
    for name, server in DOCUMENT["servers"].items():
        check("server", server, f"#/servers/{name}")
        check("server mqtt binding", server.get("bindings", {}).get("mqtt", {}), f"#/servers/{name}/bindings/mqtt")
    for name, channel in DOCUMENT["channels"].items():
        check("channel", channel, f"#/channels/{name}")
    for name, operation in DOCUMENT["operations"].items():
        check("operation", operation, f"#/operations/{name}")
        check("operation mqtt binding", operation["bindings"]["mqtt"], f"#/operations/{name}/bindings/mqtt")
    for name, parameter in DOCUMENT["components"]["parameters"].items():
        check("parameter", parameter, f"#/components/parameters/{name}")
    for name, message in DOCUMENT["components"]["messages"].items():
        check("message", message, f"#/components/messages/{name}")
        check("multi-format schema", message["payload"], f"#/components/messages/{name}/payload")
        for index, example in enumerate(message.get("examples", [])):
            check("message example", example, f"#/components/messages/{name}/examples/{index}")
    assert not problems, "\n".join(problems)
