"""A Kubernetes API for the operator's end-to-end tests: kmock's in-process emulator (by
kopf's author), extended with what kopf needs and kmock 0.8 lacks (found on this machine,
shared/notes/kopf-on-kmock.md): resourceVersion, uid, generation, 422 for a failed JSON-patch
`test`, LIST reporting the real version, WATCH replaying only newer objects, and the watch
bus marked under the same lock as its snapshot. It refuses what a real API server refuses and
kmock accepts (shared/notes/real-apiserver.md): a PATCH whose body does not match its content
type (400), a strategic merge patch or an unknown patch type on a custom resource (415), and
a status that its CRD's schema (crds/) refuses (422: a wrong type, a value not in an enum).
It stands in for an API server, which cannot run here; the same tests run against a real
cluster when KUBECONFIG is set."""

from __future__ import annotations

import asyncio
import copy
import datetime
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp.web
import attrs
import jsonpatch
import jsonpointer
import kmock
import yaml
from kmock._internal import enums, parsing, rendering
from kmock._internal.dicts import patch_dict
from kmock._internal.k8s import KubernetesObjectConflictError, KubernetesScaffold

RESOURCES = {
    "v1/namespaces": kmock.ResourceInfo(kind="Namespace", namespaced=False,
                                        verbs={"list", "watch", "get"}),
    "v1/secrets": kmock.ResourceInfo(kind="Secret", namespaced=True,
                                     verbs={"get", "list", "create", "update", "patch", "delete"}),
    "v1/events": kmock.ResourceInfo(kind="Event", namespaced=True, verbs={"create", "list"}),
    "apiextensions.k8s.io/v1/customresourcedefinitions": kmock.ResourceInfo(
        kind="CustomResourceDefinition", namespaced=False, verbs={"list", "watch", "get"}),
    "strongroom.io/v1/tenants": kmock.ResourceInfo(
        kind="Tenant", namespaced=False, subresources={"status"},
        verbs={"get", "list", "watch", "create", "patch", "delete"}),
    "strongroom.io/v1/apikeys": kmock.ResourceInfo(
        kind="ApiKey", namespaced=True, subresources={"status"},
        verbs={"get", "list", "watch", "create", "patch", "delete"}),
    "strongroom.io/v1/oauthclients": kmock.ResourceInfo(
        kind="OAuthClient", namespaced=True, subresources={"status"},
        verbs={"get", "list", "watch", "create", "patch", "delete"}),
}  # fmt: skip
PEERING = {  # kopf's peering resources, when the test installs them (crds/peering.kopf.dev.yaml)
    "kopf.dev/v1/clusterkopfpeerings": kmock.ResourceInfo(
        kind="ClusterKopfPeering", namespaced=False,
        verbs={"get", "list", "watch", "create", "patch"}),
    "kopf.dev/v1/kopfpeerings": kmock.ResourceInfo(  # an operator run with --namespace
        kind="KopfPeering", namespaced=True, verbs={"get", "list", "watch", "create", "patch"}),
}  # fmt: skip


CRDS = Path(__file__).resolve().parents[2] / "crds"


def status_schemas() -> dict[str, dict]:
    """The `status` schema of each custom resource of crds/, by plural."""
    schemas = {}
    for path in sorted(CRDS.glob("*.strongroom.io.yaml")):
        crd = yaml.safe_load(path.read_text())
        [version] = crd["spec"]["versions"]
        properties = version["schema"]["openAPIV3Schema"]["properties"]
        schemas[crd["spec"]["names"]["plural"]] = properties["status"]
    return schemas


def schema_errors(value, schema: dict, path: str) -> list[str]:
    """What a real API server says of `value` against a structural schema: wrong types,
    values outside an enum, missing required fields (the parts the CRDs use)."""
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool,
             "integer": int, "number": (int, float)}  # fmt: skip
    wanted = schema.get("type")
    if wanted and (
        not isinstance(value, kinds[wanted])
        or (wanted in ("integer", "number") and isinstance(value, bool))
    ):
        return [f'{path}: Invalid value: "{value}": {path} in body must be of type {wanted}']
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(f'"{choice}"' for choice in schema["enum"])
        return [f'{path}: Unsupported value: "{value}": supported values: {supported}']
    errors = []
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}.{name}: Required value")
        for name, inner in (schema.get("properties") or {}).items():
            if name in value and value[name] is not None:
                errors += schema_errors(value[name], inner, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{index}]")
    return errors


def parse_path(path: str, _kmock_parse=parsing.parse_path) -> parsing.ParsedPath:
    """kmock's path parsing, except that `/api/v1/namespaces[/<name>]` are Namespaces (kmock
    reads `namespaces/` as the start of a namespaced path and fails on the list: an operator
    run with `--namespace` lists and watches the cluster's Namespaces)."""
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) <= 4:
        return parsing.ParsedPath("", "v1", "namespaces", None, (parts[3:] or [None])[0])
    return _kmock_parse(path)


parsing.parse_path = parse_path


def merged(target, patch):
    """RFC 7386: `patch` merged into `target` (null removes a field)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merged(result.get(name), value)
    return result


MERGE_PATCH, JSON_PATCH = "application/merge-patch+json", "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def refuse_mismatched_patch(request: rendering.Request) -> None:
    """As a real API server: a JSON Patch is an array of operations, a merge patch an object;
    custom resources take no strategic merge patch. (Server-side apply is not emulated.)"""
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    custom = "." in (request.resource.group or "")
    if content_type == JSON_PATCH and not isinstance(request.data, list):
        raise kmock.KubernetesError(
            status=400, reason="BadRequest", message="error decoding patch: json: cannot "
            "unmarshal object into Go value of type []handlers.jsonPatchOp")  # fmt: skip
    if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH) and not isinstance(request.data, dict):
        raise kmock.KubernetesError(
            status=400, reason="BadRequest", message="error decoding patch: json: cannot "
            "unmarshal array into Go value of type map[string]interface {}")  # fmt: skip
    if content_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH) or (
        custom and content_type == STRATEGIC_MERGE_PATCH
    ):
        raise kmock.KubernetesError(
            status=415, reason="UnsupportedMediaType",
            message=f"the body of the request was in an unknown format: {content_type}",
        )  # fmt: skip


def refuse_new_finalizers_while_deleted(request: rendering.Request, raw: dict) -> None:
    """422, as a real API server refuses a finalizer added to an object whose
    deletionTimestamp is set (apimachinery's ValidateObjectMetaAccessorUpdate and
    ValidateNoNewFinalizers): removing finalizers stays allowed. A status patch never reaches
    here (a real server keeps the metadata of a status update as it was)."""
    meta = raw.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return
    try:
        candidate = patch_dict(raw, request.data)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
        return  # the patch itself fails: answered when it is applied, as before
    new = set((candidate.get("metadata") or {}).get("finalizers") or [])
    extra = sorted(new - set(meta.get("finalizers") or []))
    if not extra:
        return
    found = "[]string{" + ", ".join(f'"{name}"' for name in extra) + "}"
    said = (
        "no new finalizers can be added if the object is being deleted, "
        f"found new finalizers {found}"
    )
    kind = (
        f"{raw.get('kind')}.{request.resource.group}" if request.resource.group else raw.get("kind")
    )
    # A v1.24 server checks a custom resource's metadata twice and lists the cause twice (seen
    # on one, scripts/apiserver); the message says it once.
    cause = {"reason": "FieldValueForbidden", "message": f"Forbidden: {said}",
             "field": "metadata.finalizers"}  # fmt: skip
    raise kmock.KubernetesError(
        status=422, reason="Invalid",
        message=f'{kind} "{request.name}" is invalid: metadata.finalizers: Forbidden: {said}',
        details={"name": request.name, "group": request.resource.group, "kind": raw.get("kind"),
                 "causes": [cause, cause] if request.resource.group else [cause]},
    )  # fmt: skip


@attrs.define(kw_only=True)
class Emulator(kmock.KubernetesEmulator):
    """`forbidden`: plurals whose creation is refused with 403, as a hardened cluster refuses
    a Secret owned with `blockOwnerDeletion` when `<owner>/finalizers` is not granted.
    `status_schemas`: the status schema of each custom resource (crds/, by plural), against
    which a patch of the status subresource is checked; a test may narrow one (as a CRD
    older than the operator would be)."""

    _version: int = attrs.field(default=0, init=False)
    forbidden: set[str] = attrs.field(factory=set, init=False)
    status_schemas: dict[str, dict] = attrs.field(factory=status_schemas, init=False)

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        try:
            return await self._handle_resource(request)
        except kmock.KubernetesError as error:  # answered as the API server would (404, 409...)
            return await self._render_error(error)

    async def _handle_resource(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource is None:
            return await KubernetesScaffold._handle(self, request)
        if request.method == enums.method.PATCH:
            refuse_mismatched_patch(request)
        if request.action == enums.action.CREATE and request.resource.plural in self.forbidden:
            raise kmock.KubernetesError(
                status=403, reason="Forbidden", message=f"{request.resource.plural} is "
                "forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a "
                "resource you can't set finalizers on")  # fmt: skip
        delete_key = None
        now = datetime.datetime.now(tz=datetime.UTC).isoformat()
        async with self._lock:
            if request.action == enums.action.CREATE:
                data = dict(request.data)
                meta = dict(data.get("metadata", {}))
                if "name" not in meta:  # events are posted with generateName
                    meta["name"] = meta.get("generateName", "") + uuid.uuid4().hex[:8]
                    # kmock finds the created object by the request's name: give it one.
                    request.data["metadata"] = meta
                key = (request.resource, request.namespace or meta.get("namespace"), meta["name"])
                if key in self._objects and not self._objects[key].deleted:
                    raise KubernetesObjectConflictError(status=409, reason="AlreadyExists")
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", now)
                meta["generation"] = 1
                meta["resourceVersion"] = self._next_version()
                if key[1] is not None:
                    meta["namespace"] = key[1]
                data["metadata"] = meta
                if key in self._objects:
                    self._objects[key].create(data)
                else:
                    self._objects[key] = data
                await self._buses[request.resource].put(
                    {"type": "ADDED", "object": self._objects[key].last.raw}
                )
            elif request.action in (enums.action.UPDATE, enums.action.DELETE) and request.name:
                key = (request.resource, request.namespace, request.name)
                if key not in self._objects or self._objects[key].deleted:
                    raise kmock.KubernetesObjectNotFoundError(status=404, reason="NotFound")
                obj = self._objects[key]
                if request.action == enums.action.UPDATE and request.subresource == "status":
                    self._refuse_invalid_status(request, obj.raw)
                elif request.action == enums.action.UPDATE:
                    refuse_new_finalizers_while_deleted(request, obj.raw)
                if request.action == enums.action.UPDATE:
                    before = obj.raw.get("spec")
                    try:
                        obj.patch(request.data)
                    except jsonpatch.JsonPatchTestFailed as error:
                        raise kmock.KubernetesError(
                            status=422, reason="Invalid", message=str(error)
                        ) from error
                    meta = {"resourceVersion": self._next_version()}
                    if obj.raw.get("spec") != before and request.subresource != "status":
                        meta["generation"] = obj.raw["metadata"].get("generation", 1) + 1
                    obj.patch({"metadata": meta})
                    await self._buses[request.resource].put({"type": "MODIFIED", "object": obj.raw})
                elif obj.get("metadata", {}).get("finalizers"):
                    if not obj.get("metadata", {}).get("deletionTimestamp"):
                        obj.patch(
                            {
                                "metadata": {
                                    "deletionTimestamp": now,
                                    "resourceVersion": self._next_version(),
                                }
                            }
                        )
                        await self._buses[request.resource].put(
                            {"type": "MODIFIED", "object": obj.raw}
                        )
                else:
                    obj.delete()
                    await self._buses[request.resource].put(
                        {"type": "DELETED", "object": obj.last.raw}
                    )
                if not obj.deleted:
                    meta = obj.get("metadata", {})
                    if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                        delete_key = key
        try:
            return await KubernetesScaffold._handle(self, request)
        finally:
            if delete_key is not None:
                async with self._lock:
                    raw = self._objects[delete_key].raw
                    self._objects[delete_key].delete()
                    await self._buses[delete_key[0]].put({"type": "DELETED", "object": raw})

    def _refuse_invalid_status(self, request: rendering.Request, raw: dict) -> None:
        """422, as a real API server answers a status that fails its CRD's schema."""
        schema = self.status_schemas.get(request.resource.plural)
        if schema is None:
            return
        if isinstance(request.data, list):
            try:
                candidate = jsonpatch.apply_patch(copy.deepcopy(raw), request.data)
            except jsonpatch.JsonPatchException:
                return  # the patch itself fails: answered below, as before
        else:
            candidate = merged(copy.deepcopy(raw), request.data)
        errors = schema_errors(candidate.get("status") or {}, schema, "status")
        if errors:
            kind = f"{raw.get('kind')}.{request.resource.group}"
            raise kmock.KubernetesError(
                status=422, reason="Invalid",
                message=f'{kind} "{request.name}" is invalid: {", ".join(errors)}',
            )  # fmt: skip

    def _matching(self, request: rendering.Request) -> list:
        return [
            obj for (resource, namespace, name), obj in self._objects.items()
            if resource == request.resource and not obj.deleted
            and (request.namespace is None or namespace == request.namespace)
            and (request.name is None or name == request.name)
        ]  # fmt: skip

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        async with self._lock:
            items = [obj.raw for obj in self._matching(request)]
            version = str(self._version)
        return {"metadata": {"resourceVersion": version}, "items": items}

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        yield b""
        since = int(request.params.get("resourceVersion") or 0)
        bus = self._buses[request.resource]
        async with self._lock:  # the snapshot and the bus mark under one lock
            events = [
                {"type": "ADDED", "object": obj.raw} for obj in self._matching(request)
                if int(obj.raw["metadata"].get("resourceVersion", 0)) > since
            ]  # fmt: skip
            marker = await bus.mark()
        for event in events:
            yield event
        try:
            async for event in bus.stream(since=marker):
                meta = event.get("object", {}).get("metadata", {})
                if (request.namespace is None or meta.get("namespace") == request.namespace) and (
                    request.name is None or meta.get("name") == request.name
                ):
                    yield event
        finally:
            await bus.unmark(marker)


class EmulatedCluster:
    """The emulator served on a free port from a thread of its own, with a kubeconfig."""

    def __init__(self, directory: Path, *, peering: bool = False) -> None:
        self.emulator = Emulator()
        for key, info in (RESOURCES | (PEERING if peering else {})).items():
            self.emulator.resources[key] = info
        self.emulator.objects["v1/namespaces", None, "default"] = {  # as any cluster has
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "default", "uid": str(uuid.uuid4()),
                         "resourceVersion": "0"}}  # fmt: skip
        self.kubeconfig = directory / "kubeconfig"
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        async def main() -> None:
            async with kmock.Server(self.emulator) as server:
                self.url = str(server.url).rstrip("/")
                self._stop = asyncio.Event()
                self._loop = asyncio.get_running_loop()
                self._ready.set()
                await self._stop.wait()

        asyncio.run(main())

    def __enter__(self) -> EmulatedCluster:
        self._thread.start()
        assert self._ready.wait(10), "the emulator did not start"
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: kmock\n"
            f"clusters: [{{name: kmock, cluster: {{server: '{self.url}'}}}}]\n"
            "users: [{name: kmock, user: {token: test}}]\n"
            "contexts: [{name: kmock, context: {cluster: kmock, user: kmock}}]\n"
        )
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
