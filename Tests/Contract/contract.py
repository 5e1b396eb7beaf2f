"""The contract of docs/contract.md as the checks see it: the AsyncAPI document with its JSON Schemas, how a
request payload is read, and the real processes (mosquitto, mosquitto_sub, `restock serve`) the checks drive.

Every wait polls its condition against a deadline; nothing sleeps to synchronise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ASYNCAPI = DOCS / "asyncapi.yaml"
CONTRACT = DOCS / "contract.md"
SCHEMAS = DOCS / "schemas"
MAX_PAYLOAD = 4096


# MARK: The AsyncAPI document


def load_asyncapi(path: Path = ASYNCAPI) -> dict:
    with open(path, encoding="utf-8") as file:
        return yaml.safe_load(file)


def resolve_pointer(document: dict, pointer: str):
    """The value at a JSON pointer (`#/a/b`) in `document`; KeyError when there is none."""
    node = document
    for token in pointer.lstrip("#").lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def deref(document: dict, node):
    """Follows a local `$ref` (`#/…`) in the AsyncAPI document."""
    while isinstance(node, dict) and "$ref" in node and str(node["$ref"]).startswith("#"):
        node = resolve_pointer(document, node["$ref"])
    return node


def schema_registry() -> Registry:
    """Every schema under docs/schemas, by file name, so that `common.json#/$defs/…` resolves."""
    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        with open(path, encoding="utf-8") as file:
            resources.append((path.name, Resource.from_contents(json.load(file))))
    return Registry().with_resources(resources)


def load_schema(name: str) -> dict:
    with open(SCHEMAS / name, encoding="utf-8") as file:
        return json.load(file)


@dataclass
class Message:
    name: str
    content_type: str
    schema_file: str
    schema: dict


@dataclass
class Channel:
    name: str
    address: str
    pattern: re.Pattern
    messages: list[Message]
    #: (qos, retain) of the operations on it, by action and role tag.
    bindings: list[tuple[str, set[str], int, bool]] = field(default_factory=list)
    #: The QoS of the store's `online` statuses (its heartbeats), where it is not the channel's: `x-online-qos`.
    online_qos: int | None = None

    def sent_by(self, role: str) -> bool:
        return any(action == "send" and role in tags for action, tags, _, _ in self.bindings)

    def binding(self) -> tuple[int, bool]:
        pairs = {(qos, retain) for _, _, qos, retain in self.bindings}
        assert len(pairs) == 1, f"{self.name}: operations disagree on QoS/retain: {pairs}"
        return pairs.pop()


IDENTIFIER = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


def _ecma_pattern(validator, pattern, instance, schema):
    # JSON Schema patterns are ECMA-262 regular expressions, where `$` is the end of the input; in Python's `re`
    # it also matches before a final newline, which would let "ipad\n" pass as an identifier.
    if validator.is_type(instance, "string") and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


ContractValidator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


class Contract:
    """The AsyncAPI document's channels, with their messages and bindings, and the validators of their schemas."""

    def __init__(self, path: Path = ASYNCAPI):
        self.document = load_asyncapi(path)
        self.registry = schema_registry()
        self.channels: list[Channel] = []
        for name, raw in self.document["channels"].items():
            channel = deref(self.document, raw)
            address = channel["address"]
            regex = re.escape(address)
            for parameter in channel.get("parameters", {}):
                regex = regex.replace(re.escape("{" + parameter + "}"), f"(?P<{parameter}>{IDENTIFIER})")
            messages = []
            for message_name, message_ref in channel["messages"].items():
                message = deref(self.document, message_ref)
                payload = message["payload"]
                schema_ref = payload["schema"]["$ref"] if "schema" in payload else payload["$ref"]
                schema_file = Path(schema_ref.split("#")[0]).name
                messages.append(
                    Message(
                        message_name,
                        message.get("contentType", self.document.get("defaultContentType", "application/json")),
                        schema_file,
                        load_schema(schema_file),
                    )
                )
            self.channels.append(Channel(name, address, re.compile("^" + regex + "$"), messages))
        for operation in self.document["operations"].values():
            channel = deref(self.document, operation["channel"])
            mqtt = operation["bindings"]["mqtt"]
            tags = {tag["name"] for tag in operation.get("tags", [])}
            target = next(c for c in self.channels if c.address == channel["address"])
            target.bindings.append((operation["action"], tags, int(mqtt["qos"]), bool(mqtt["retain"])))
            if "x-online-qos" in operation:
                target.online_qos = int(operation["x-online-qos"])

    def channel(self, topic: str) -> Channel | None:
        matches = [c for c in self.channels if c.pattern.match(topic)]
        assert len(matches) <= 1, f"{topic} matches several channels: {[c.name for c in matches]}"
        return matches[0] if matches else None

    def validator(self, schema: dict):
        return ContractValidator(schema, registry=self.registry)

    def errors(self, schema: dict, instance) -> list[str]:
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in self.validator(schema).iter_errors(instance)]

    def check_request(self, topic: str, payload: bytes) -> list[str]:
        """Why `payload` on `topic` breaks the contract's request rules and schemas; [] when it is valid."""
        channel = self.channel(topic)
        if channel is None:
            return [f"{topic}: no channel of the contract"]
        if len(payload) > MAX_PAYLOAD:
            return [f"the payload is {len(payload)} bytes; the limit is {MAX_PAYLOAD}"]
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return ["the payload is not UTF-8"]
        # One leading byte order mark is ignored, before or after the whitespace (contract.md, "How a request payload
        # is read", point 3).
        trimmed = text.strip()
        if trimmed.startswith("\ufeff"):
            trimmed = trimmed[1:].strip()
        if trimmed.startswith("{"):
            try:
                instance = json.loads(trimmed)
            except ValueError as error:
                return [f"not JSON: {error}"]
            content_type = "application/json"
        elif trimmed.startswith("[") or trimmed.startswith('"'):
            return ["a JSON array or string is not a request"]
        else:
            instance, content_type = trimmed, "text/plain"
        candidates = [m for m in channel.messages if m.content_type == content_type]
        if not candidates:
            return [f"{channel.name} takes no {content_type} payload"]
        problems = []
        for message in candidates:
            found = self.errors(message.schema, instance)
            if not found:
                return []
            problems += [f"{message.schema_file}: {p}" for p in found]
        return problems

    def check_publication(self, topic: str, payload: bytes, qos: int, retain: bool) -> list[str]:
        """Why a message the store published breaks the contract; [] when it keeps it."""
        channel = self.channel(topic)
        if channel is None:
            return [f"{topic}: not a topic of the contract"]
        if not channel.sent_by("store"):
            return [f"{topic}: the store does not write {channel.address}"]
        problems = []
        expected_qos, expected_retain = channel.binding()
        if channel.online_qos is not None and b'"state":"online"' in payload:
            expected_qos = channel.online_qos
        if qos != expected_qos:
            problems.append(f"published at QoS {qos}, the contract says {expected_qos}")
        if retain != expected_retain:
            problems.append(f"retain flag {int(retain)}, the contract says {int(expected_retain)}")
        if payload == b"" and retain and expected_retain:
            # An empty retained message clears the topic (a forgotten customer's mirror): nothing to validate.
            return problems
        try:
            instance = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            return problems + [f"not JSON: {error}"]
        # A channel of several messages (the admin's replies): the payload keeps the contract if it is one of them.
        candidates = [
            [f"{m.schema_file}: {p}" for p in self.errors(m.schema, instance) + undocumented_fields(m.schema, instance, self.registry)]
            for m in channel.messages
        ]
        return problems + min(candidates, key=len)


def undocumented_fields(schema: dict, instance, registry: Registry, path: str = "") -> list[str]:
    """Fields of `instance` that `schema` does not name. The schemas let consumers meet fields a later release
    adds; the store of this release must not publish any."""
    resolver = registry.resolver()
    while "$ref" in schema:
        schema = resolver.lookup(schema["$ref"]).contents
    found = []
    if isinstance(instance, dict) and "properties" in schema:
        for key, value in instance.items():
            if key not in schema["properties"]:
                found.append(f"{path or '(root)'}: field {key!r} is not in the contract")
            else:
                found += undocumented_fields(schema["properties"][key], value, registry, f"{path}/{key}")
    if isinstance(instance, list) and "items" in schema:
        for index, item in enumerate(instance):
            found += undocumented_fields(schema["items"], item, registry, f"{path}/{index}")
    return found


def contract_topics(path: Path = CONTRACT) -> list[str]:
    """The topics of the table under `## Topics` in docs/contract.md."""
    text = path.read_text(encoding="utf-8")
    section = text.split("\n## Topics\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(restock/[^`]+)` \|", section, flags=re.MULTILINE)


def contract_error_codes(path: Path = CONTRACT) -> list[str]:
    text = path.read_text(encoding="utf-8")
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE)


# MARK: Processes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, what: str, seconds: float = 15.0):
    """Polls `condition` until it returns something truthy, which is returned; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.02)  # a polling interval, not a wait for an event


def stop(process: subprocess.Popen, sig=signal.SIGTERM, seconds: float = 15.0):
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Broker:
    """A private mosquitto on a free loopback port with a generated configuration."""

    def __init__(self):
        self.directory = Path(tempfile.mkdtemp(prefix="restock-contract-"))
        self.port = free_port()
        config = self.directory / "mosquitto.conf"
        config.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n"
            f"log_dest file {self.directory / 'mosquitto.log'}\n"
        )
        self.process = subprocess.Popen(["mosquitto", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_until(self._accepts, f"mosquitto on port {self.port}")

    def _accepts(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"mosquitto exited with {self.process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def publish(self, topic: str, payload: bytes, retain: bool = False, response_topic: str | None = None,
                correlation: str | None = None):
        with tempfile.NamedTemporaryFile(dir=self.directory, delete=False) as file:
            file.write(payload)
        command = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.port), "-q", "1", "-t", topic, "-f", file.name]
        if retain:
            command.append("-r")
        if response_topic:  # MQTT 5 request/response
            command += ["-V", "5", "-D", "publish", "response-topic", response_topic]
            if correlation:
                command += ["-D", "publish", "correlation-data", correlation]
        subprocess.run(command, check=True, timeout=15)
        os.unlink(file.name)

    def close(self):
        stop(self.process)
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class Captured:
    index: int
    topic: str
    payload: bytes
    qos: int
    retain: bool


class Capture:
    """mosquitto_sub on `restock/#` (MQTT 5, QoS 2, retain as published): every message, its QoS and retain flag.
    The topic comes last on each line, so it may hold spaces; the payload is in hex, so it may hold anything."""

    def __init__(self, broker: Broker, filters=("restock/#",)):
        self.broker = broker
        self.path = broker.directory / f"capture-{free_port()}.txt"
        self.output = open(self.path, "wb")
        command = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "5", "-q", "2",
                   "--retain-as-published", "-F", "%r %q %x %t", "-t", "contract-probe/#"]
        for topic_filter in filters:
            command += ["-t", topic_filter]
        self.process = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT)
        self.messages: list[Captured] = []
        self._read = 0
        # Subscribed once a probe comes back.
        wait_until(self._probe, "mosquitto_sub to subscribe")

    def _probe(self) -> bool:
        self.broker.publish("contract-probe/ready", b"1")
        return any(m.topic == "contract-probe/ready" for m in self.poll())

    def poll(self) -> list[Captured]:
        """Reads what mosquitto_sub has written since the last call."""
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        for line in data[self._read:end].decode("ascii", "replace").splitlines():
            retain, qos, payload, topic = line.split(" ", 3)
            self.messages.append(Captured(len(self.messages), topic, bytes.fromhex(payload), int(qos), retain == "1"))
        self._read = end
        return self.messages

    def wait_for(self, what: str, predicate, after: int = 0, seconds: float = 15.0) -> Captured:
        def found():
            return next((m for m in self.poll()[after:] if predicate(m)), None)

        return wait_until(found, what, seconds)

    def close(self):
        stop(self.process)
        self.output.close()


def restock_binary() -> Path:
    if "RESTOCK_BIN" in os.environ:
        return Path(os.environ["RESTOCK_BIN"])
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True)
    return Path(bin_path.stdout.strip()) / "restock"


class StoreProcess:
    """`restock serve` on the broker, with its own data directory."""

    def __init__(self, broker: Broker, data: Path, store: str = "apple"):
        self.log = open(data.parent / f"store-{free_port()}.log", "wb")
        self.process = subprocess.Popen(
            [str(restock_binary()), "serve", "--broker", broker.url, "--store", store, "--data", str(data)],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self, sig=signal.SIGTERM):
        stop(self.process, sig)
        self.log.close()
