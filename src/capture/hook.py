"""kwb's capture hook: records the Triton kernel launches of an unchanged program.

kwb copies this file into a fresh folder as `sitecustomize.py`, puts that folder first on
PYTHONPATH and runs the user's program. Python imports us at start-up; we then wait, at no
cost, for Triton to be imported and wrap the two methods every `kernel[grid](...)` reaches:
`JITFunction.run` (compiled) and `InterpretedFunction.run` (TRITON_INTERPRET=1). Each new
specialisation of a kernel becomes one line of `$KWB_CAPTURE_DIR/launches-<pid>.jsonl`, with
its tensors' contents before and after the launch as .npy files, so kwb can rebuild it.

Promises: every launch runs exactly once and exactly as it would have; a failure of ours
becomes an `error` line, never the program's failure; the program's own exceptions pass
through untouched; a program that never imports Triton pays nothing.
"""
import atexit
import fnmatch
import functools
import hashlib
import importlib
import inspect
import json
import math
import numbers
import os
import sys
import types
import threading
import traceback
import warnings

_MISSING = object()


class _ThreadState(threading.local):
    benching = 0  # > 0 while an autotuner times its candidate configs (a class default: a fast read)
    busy = 0  # > 0 while the hook itself works: launches its own torch calls make are not the program's


_tls = _ThreadState()
_BAD_DTYPES = ("float8", "float4", "complex", "bits", "qint", "quint")


def _int_env(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def _float_json(x):
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _arg_class(v):
    """What about a runtime argument changes compilation (Triton's `specialize_impl`)."""
    t = type(v)
    if t is int:
        return ("i", v == 1, v % 16 == 0, -2**31 <= v < 2**31)
    if v is None or t is bool or t is float:
        return t
    dtype = getattr(v, "dtype", None)
    if dtype is not None and hasattr(v, "data_ptr"):
        return ("t", dtype)
    if isinstance(v, numbers.Integral):
        return _arg_class(int(v))
    return t


def _as_tensor(v, torch):
    """A pointer argument that is not a torch.Tensor but has data_ptr(), a torch dtype, a shape,
    stride() and untyped_storage() (flag-gems' StridedBuffer), as the tensor view over the same
    memory: (tensor, None), or (None, why it cannot be one)."""
    dtype = getattr(v, "dtype", None)
    if not isinstance(dtype, torch.dtype):
        return None, "whose dtype is not a torch dtype"
    try:
        shape = tuple(int(n) for n in v.shape)
        strides = tuple(int(n) for n in v.stride())
        storage = v.untyped_storage()
        address = int(v.data_ptr())
    except Exception:
        return None, "without a shape, strides and storage"
    if not isinstance(storage, torch.UntypedStorage) or len(shape) != len(strides):
        return None, "without a torch storage"
    if any(st < 0 for st in strides):
        return None, "with negative strides (a reversed view)"
    offset = address - storage.data_ptr()
    if offset < 0 or offset % dtype.itemsize:
        return None, "whose address is not an element of its storage"
    try:
        t = torch.empty(0, dtype=dtype, device=storage.device)
        return t.set_(storage, offset // dtype.itemsize, shape, strides), None
    except Exception as exc:
        return None, f"that is not a view of its storage ({exc})"


def _triton_path(v):
    """The dotted path of a Triton module or function (`triton.language.extra.cuda.libdevice.isnan`),
    or None for anything else."""
    if isinstance(v, types.ModuleType):
        return v.__name__ if v.__name__.startswith("triton") else None
    mod, name = getattr(v, "__module__", None), getattr(v, "__name__", None)
    if not isinstance(mod, str) or not isinstance(name, str) or not mod.startswith("triton"):
        return None
    return f"{mod}.{name}" if getattr(sys.modules.get(mod), name, None) is v else None


def _runtime_globals(fn_obj, file):
    """Names of the kernel's module that, at the launch, are Triton modules or functions its
    source does not bind, or binds by an assignment kwb cannot evaluate (`_isnan =
    tl_extra_shim.isnan`): {name: dotted path}. A library may fill a generated module's
    namespace at run time (flag-gems' pointwise_dynamic does)."""
    import ast
    g = getattr(getattr(fn_obj, "fn", None), "__globals__", None)
    if not isinstance(g, dict):
        return {}
    try:
        with open(file) as f:
            tree = ast.parse(f.read())
    except Exception:
        return {}
    bound, assigned = set(), set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                assigned.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.If, ast.Try)):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    for sub in getattr(node, part, []) or []:
                        visit(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])

    visit(tree.body)
    out = {}
    for name, v in list(g.items()):
        if name.startswith("__") or (name in bound and name not in assigned):
            continue
        path = _triton_path(v)
        if path is not None and (name not in bound or name in assigned):
            out[name] = path
    return out


def _import_path():
    """The program's `sys.path` now, as folders kwb can look in for a kernel's imports: those
    that exist, less Python's own library and this hook's folder."""
    import sysconfig
    skip = {os.path.realpath(p) for p in (sysconfig.get_paths().get("stdlib"),
                                          sysconfig.get_paths().get("platstdlib")) if p}
    hook = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for p in sys.path:
        real = os.path.realpath(p or os.getcwd())
        if os.path.isdir(real) and real not in skip and real != hook and real not in out:
            out.append(real)
    return out


def _is_constexpr(annotation):
    if annotation is inspect.Parameter.empty:
        return False
    try:
        from triton.runtime.jit import _normalize_ty
        return "constexpr" in _normalize_ty(annotation)
    except Exception:
        return "constexpr" in str(annotation)


class _Kernel:
    """One kernel function (file + name): its parameters and what we have recorded of it."""

    def __init__(self, fn_obj, wanted):
        fn = fn_obj.fn
        self.name = fn.__name__
        self.file = os.path.abspath(fn.__code__.co_filename)
        self.wanted = wanted(self.name)
        kparams = getattr(fn_obj, "params", None)  # JITFunction knows which are constexpr
        if kparams and all(hasattr(p, "is_constexpr") for p in kparams):
            self.params = [(p.name, p.is_constexpr, p.default if p.has_default else _MISSING) for p in kparams]
        else:
            self.params = [(p.name, _is_constexpr(p.annotation), _MISSING if p.default is p.empty else p.default)
                           for p in inspect.signature(fn).parameters.values()]
        self.names = {name for name, _, _ in self.params}
        self.flags = [cx for _, cx, _ in self.params]  # by position: is it a constexpr?
        self.runtime_names = {name for name, cx, _ in self.params if not cx}
        self.keys = set()  # specialisations tried already, recorded or not
        self.call_keys = set()  # the same, as the calls spelled them: the cheap test
        self.closed = not self.wanted  # nothing more to record: launches pass straight through
        self.launches = self.recorded = self.skipped = self.over_limit = self.errors = 0
        self.limit_reported = False
        self._line = None
        self._fn = fn

    @property
    def line(self):
        # co_firstlineno is the first decorator's line; kwb wants the `def` itself.
        if self._line is None:
            self._line = self._fn.__code__.co_firstlineno
            try:
                lines, start = inspect.getsourcelines(self._fn)
                self._line = next(start + i for i, text in enumerate(lines)
                                  if text.lstrip().startswith(("def ", "async def ")))
            except Exception:
                pass
        return self._line

    def bind(self, args, kwargs):
        """Triton's binding: (every parameter by name in order, the launch options), or
        None when the call is malformed; then Triton itself will raise the program's error."""
        if len(args) > len(self.params):
            return None
        given = {name: v for (name, _, _), v in zip(self.params, args)}
        options = {}
        for k, v in kwargs.items():
            if k not in self.names:
                options[k] = v
            elif k in given:
                return None
            else:
                given[k] = v
        bound = {}
        for name, _, default in self.params:
            v = given.get(name, default)
            if v is _MISSING:
                return None
            bound[name] = v
        return bound, options

    def key(self, args, kwargs):
        """What in this call changes compilation. Keys of the call as written are cheap and
        decide most launches; one specialisation may be written several ways, so the key of
        the bound call (all arguments positional, options sorted) decides the rest."""
        flags, n = self.flags, len(self.flags)
        # The type goes in with a constexpr's value: Triton compiles True, 1 and 1.0 differently.
        key = [(type(a), a) if i < n and flags[i] else _arg_class(a) for i, a in enumerate(args)]
        for k, v in kwargs.items():
            if k != "grid" and k != "warmup":
                key.append((k, _arg_class(v) if k in self.runtime_names else (type(v), v)))
        key = tuple(key)
        try:
            hash(key)
            return key
        except TypeError:  # a list as a constexpr, say
            return repr(key)


class _Sink:
    """This process's jsonl file, and the .npy byte budget it shares with other processes."""

    def __init__(self, folder, max_bytes):
        self.folder, self.max_bytes = folder, max_bytes
        self.file, self.pid, self.npy_bytes = None, None, None
        self.lock = threading.RLock()

    def write(self, record):
        line = json.dumps(record, allow_nan=False, separators=(",", ":"))
        with self.lock:
            if self.pid != os.getpid():  # first write, or a forked child
                os.makedirs(self.folder, exist_ok=True)
                self.pid = os.getpid()
                self.file = open(os.path.join(self.folder, f"launches-{self.pid}.jsonl"), "a")
            self.file.write(line + "\n")
            self.file.flush()  # a crash later loses nothing already written

    def bytes_left(self):
        if self.npy_bytes is None:
            try:
                names = [n for n in os.listdir(self.folder) if n.endswith(".npy")]
                self.npy_bytes = sum(os.path.getsize(os.path.join(self.folder, n)) for n in names)
            except OSError:
                self.npy_bytes = 0
        return self.max_bytes - self.npy_bytes

    def save_npy(self, name, array):
        import numpy
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, name)
        numpy.save(path, array)
        self.npy_bytes = (self.npy_bytes or 0) + os.path.getsize(path)
        return name


def _npy_of(host, torch):
    """A host tensor as numpy, and the numpy dtype when it differs from the tensor's."""
    if host.dtype == torch.bfloat16:
        return host.float().numpy(), "float32"
    try:
        return host.numpy(), None
    except (TypeError, RuntimeError):  # fp8 and friends: keep the raw bits
        return host.view(torch.uint8).numpy(), "uint8"


def _npy_size(host, torch):
    return host.numel() * (4 if host.dtype == torch.bfloat16 else host.element_size()) + 128


class _Snapshot:
    """One tensor argument's reachable memory, copied to the host before the launch."""

    def __init__(self, index, tensor, span, entry, torch):
        self.index, self.tensor, self.span, self.entry = index, tensor, span, entry
        self.before = self.read(torch)
        self.after = None

    def read(self, torch):
        flat = torch.as_strided(self.tensor.detach(), (self.span,), (1,))  # keeps the storage offset
        return flat.to("cpu", copy=True)


class _Capture:
    def __init__(self, folder):
        patterns = [p.strip() for p in os.environ.get("KWB_CAPTURE_KERNELS", "").split(",") if p.strip()]
        self.wanted = lambda name: not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)
        self.max_per_kernel = _int_env("KWB_CAPTURE_MAX_PER_KERNEL", 1)
        self.time = os.environ.get("KWB_CAPTURE_TIME") == "1"
        self.reps = max(1, _int_env("KWB_CAPTURE_REPS", 20))
        self.sink = _Sink(folder, _int_env("KWB_CAPTURE_MAX_BYTES", 2 << 30))
        self.flush_buffers = {}
        self.patched = False
        self.reset()

    def reset(self):
        """A fresh start; also run in a forked child, so it records like a spawned one."""
        self.by_object, self.by_identity = {}, {}
        self.started, self.launches, self.recorded, self.bench_launches = False, 0, 0, 0

    def kernel_for(self, fn_obj):
        entry = self.by_object.get(id(fn_obj))
        if entry is None or entry[0] is not fn_obj:
            fn = fn_obj.fn
            identity = (os.path.abspath(fn.__code__.co_filename), fn.__name__)
            kernel = self.by_identity.get(identity) or _Kernel(fn_obj, self.wanted)
            self.by_identity[identity] = kernel
            entry = self.by_object[id(fn_obj)] = (fn_obj, kernel)  # holding fn_obj keeps its id ours
        return entry[1]

    # -- records ----------------------------------------------------------------------------
    def start(self, interp):
        self.started = True
        torch, triton = sys.modules.get("torch"), sys.modules.get("triton")
        device = None
        try:  # never initialise CUDA ourselves: a program that forks later would break
            if torch is not None and not interp and torch.cuda.is_available() and torch.cuda.is_initialized():
                device = torch.cuda.get_device_name()
        except Exception:
            pass
        self.sink.write({"type": "start", "pid": os.getpid(), "argv": list(sys.argv),
                         "triton_version": getattr(triton, "__version__", None),
                         "torch_version": getattr(torch, "__version__", None),
                         "interpret": bool(interp), "device": device})

    def error(self, fn_obj, exc):
        name = getattr(getattr(fn_obj, "fn", None), "__name__", None)
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if where:
            message += f" (at {os.path.basename(where[0].filename)}:{where[0].lineno})"
        try:
            self.sink.write({"type": "error", "kernel": name, "message": message})
            if name is not None:
                kernel = self.kernel_for(fn_obj)
                kernel.errors += 1
                kernel.closed = kernel.closed or kernel.errors >= 5  # stop retrying a kernel we cannot take
        except Exception:
            pass

    def limit(self, kernel, needed):
        kernel.over_limit += 1
        if not kernel.limit_reported:
            kernel.limit_reported = True
            self.sink.write({"type": "limit", "kernel": kernel.name, "bytes_needed": needed,
                             "max_bytes": self.sink.max_bytes})

    def summary(self):
        if not self.patched:
            return
        if not self.started:
            triton = sys.modules.get("triton")
            self.start(bool(getattr(getattr(getattr(triton, "knobs", None), "runtime", None), "interpret", False)))
        counts = {"skipped": {}, "over_limit": {}}
        for kernel in self.by_identity.values():
            for field, by_name in counts.items():
                if getattr(kernel, field):
                    by_name[kernel.name] = by_name.get(kernel.name, 0) + getattr(kernel, field)
        self.sink.write({"type": "summary", "triton": True, "launches": self.launches, "recorded": self.recorded,
                         **counts, "autotune_bench_launches": self.bench_launches})

    # -- one launch: `before` plans (or returns None, the common, cheap case), `after` writes --
    def before(self, fn_obj, interp, args, kwargs, original):
        kernel = self.kernel_for(fn_obj)
        self.launches += 1
        index, kernel.launches = kernel.launches, kernel.launches + 1
        if not self.started:
            self.start(interp)
        call_key = None if kernel.closed else kernel.key(args, kwargs)
        if kernel.closed or call_key in kernel.call_keys:
            kernel.skipped += 1
            return None
        launch_kwargs = {k: v for k, v in kwargs.items() if k != "grid" and k != "warmup"}
        binding = kernel.bind(args, launch_kwargs)
        if binding is None:
            return None
        key = kernel.key(tuple(binding[0].values()), dict(sorted(binding[1].items())))
        kernel.call_keys.add(call_key)
        if key in kernel.keys:
            kernel.skipped += 1
            return None
        kernel.keys.add(key)  # tried once, whatever happens next
        plan = self.plan(kernel, fn_obj, interp, binding[0], launch_kwargs, key, index, kwargs.get("grid"))
        if plan is not None:
            plan.update(call_key=call_key, original=original)
        return plan

    def forget(self, plan):
        """The program's launch failed: try this specialisation again next time."""
        plan["kernel"].keys.discard(plan["key"])
        plan["kernel"].call_keys.discard(plan["call_key"])

    def plan(self, kernel, fn_obj, interp, bound, launch_kwargs, key, index, grid):
        # Triton reads launch options (num_warps...) from all keyword arguments, kernel parameters too.
        torch = sys.modules.get("torch")
        tl = sys.modules.get("triton.language")
        problems, constexprs, entries, snapshots, tensors, wrappers = [], {}, [], [], [], {}
        for i, (name, is_cx, _) in enumerate(kernel.params):
            v = bound[name]
            if is_cx:
                constexprs[name] = _constexpr_json(v, name, problems, getattr(tl, "dtype", None))
                continue
            entry = {"name": name}
            entries.append(entry)
            if torch is not None and isinstance(v, torch.Tensor):
                tensors.append((i, name, v, entry))
            elif isinstance(v, bool):
                entry.update(kind="bool", value=v)
            elif isinstance(v, numbers.Integral):
                entry.update(kind="int", value=int(v))
            elif isinstance(v, numbers.Real):
                entry.update(kind="float", value=_float_json(v))
            elif v is None:
                entry.update(kind="none")
            elif torch is not None and hasattr(v, "data_ptr") and hasattr(v, "dtype"):
                # Triton takes any object with data_ptr() and dtype as a pointer (flag-gems'
                # StridedBuffer): recorded as the tensor view it stands for, when it is one.
                t, why = _as_tensor(v, torch)
                if t is None:
                    entry.update(kind="other", type=type(v).__name__)
                    problems.append(f"argument {i} (`{name}`): a {type(v).__name__} {why}, which kwb cannot take")
                else:
                    wrappers[id(v)] = t
                    tensors.append((i, name, t, entry))
            else:
                entry.update(kind="other", type=type(v).__name__)
                problems.append(f"argument {i} (`{name}`): a {type(v).__name__}, which kwb cannot take")
        for i, name, t, entry in tensors:
            dtype = str(t.dtype).replace("torch.", "")
            shape, strides = list(t.shape), list(t.stride())
            span = 0 if t.numel() == 0 else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
            entry.update(kind="tensor", dtype=dtype, shape=shape, strides=strides, span=span,
                         input=None, output=None, changed=False)
            if any(bad in dtype for bad in _BAD_DTYPES):
                problems.append(f"argument {i} (`{name}`): dtype {dtype}, which kwb cannot take")
            if t.layout != torch.strided:
                problems.append(f"argument {i} (`{name}`): a {t.layout} tensor, which kwb cannot take")
            else:
                snapshots.append((i, t, span, entry))
        problems += _overlaps(snapshots)
        snapshots = [s for s in snapshots if "alias_of" not in s[3]]
        needed = sum(span * (4 if t.dtype == torch.bfloat16 else t.element_size()) + 128
                     for _, t, span, _ in snapshots)
        if needed > self.sink.bytes_left():
            self.limit(kernel, needed)
            return None
        grid = grid(bound) if callable(grid) else grid  # exactly what Triton does with it
        grid = [int(g) for g in grid] + [1] * (3 - len(grid))
        snapshots = [_Snapshot(i, t, span, entry, torch) for i, t, span, entry in snapshots]
        record = {"type": "launch", "kernel": kernel.name, "file": kernel.file, "line": kernel.line,
                  "launch_index": index, "key": hashlib.sha1(repr(key).encode()).hexdigest()[:12],
                  "grid": grid, "num_warps": launch_kwargs.get("num_warps", 4),
                  "num_stages": launch_kwargs.get("num_stages", 3),
                  "constexprs": constexprs, "args": entries, "problems": problems,
                  "sys_path": _import_path(), "python_globals": _runtime_globals(fn_obj, kernel.file)}
        return dict(kernel=kernel, key=key, fn_obj=fn_obj, interp=interp, record=record, snapshots=snapshots,
                    torch=torch, wrappers=wrappers)

    def after(self, plan, result, args, kwargs):
        kernel, record, torch, snapshots = plan["kernel"], plan["record"], plan["torch"], plan["snapshots"]
        metadata = getattr(result, "metadata", None)  # the CompiledKernel knows the real defaults
        for field in ("num_warps", "num_stages"):
            if isinstance(getattr(metadata, field, None), int):
                record[field] = getattr(metadata, field)
        on_gpu = any(s.tensor.is_cuda for s in snapshots)
        if on_gpu:
            torch.cuda.synchronize()
        needed = 0
        for s in snapshots:
            s.after = s.read(torch)
            s.entry["changed"] = not torch.equal(s.before.view(torch.uint8), s.after.view(torch.uint8))
            needed += _npy_size(s.before, torch) + (_npy_size(s.after, torch) if s.entry["changed"] else 0)
        if needed > self.sink.bytes_left():
            return self.limit(kernel, needed)
        if snapshots and not any(s.entry["changed"] for s in snapshots):
            # Every tensor already held what the launch wrote (a buffer the allocator handed
            # back with the last identical result in it): find the outputs by replaying.
            try:
                record["probed"] = self.probe_outputs(plan, args, kwargs)
            except Exception as exc:
                record["probe_error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            needed = sum(_npy_size(s.before, torch) * (2 if s.entry["changed"] else 1) for s in snapshots)
            if needed > self.sink.bytes_left():
                return self.limit(kernel, needed)
        if self.time and on_gpu and not plan["interp"]:
            try:
                record["triton_us"], record["triton_samples"] = self.time_launch(plan, args, kwargs)
            except Exception as exc:
                record["triton_us"], record["triton_samples"] = None, 0
                record["timing_error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if on_gpu and not plan["interp"] and any(s.entry["changed"] for s in snapshots):
            try:
                spread = self.spread(plan, args, kwargs)
                if spread:
                    record["spread"] = spread
            except Exception as exc:
                record["spread_error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        prefix = f"{os.getpid()}-{self.recorded:04d}-{kernel.name}"
        for s in snapshots:
            data, npy_dtype = _npy_of(s.before, torch)
            s.entry["input"] = self.sink.save_npy(f"{prefix}-{s.index}-{s.entry['name']}-in.npy", data)
            if npy_dtype:
                s.entry["npy_dtype"] = npy_dtype
            if s.entry["changed"]:
                data, _ = _npy_of(s.after, torch)
                s.entry["output"] = self.sink.save_npy(f"{prefix}-{s.index}-{s.entry['name']}-out.npy", data)
        self.sink.write(record)
        kernel.recorded += 1
        kernel.closed = kernel.recorded >= self.max_per_kernel
        self.recorded += 1

    def call(self, plan, args, kwargs, clones):
        """The launch's arguments with `clones` (tensor id -> tensor) for the program's tensors,
        as `run` takes them."""
        torch = plan["torch"]

        def swap(v):
            v = plan["wrappers"].get(id(v), v)  # a replay passes the tensor a wrapper stood for
            return clones.get(id(v), v) if isinstance(v, torch.Tensor) else v

        call_kwargs = {k: swap(v) for k, v in kwargs.items()}
        call_kwargs["grid"], call_kwargs["warmup"] = tuple(plan["record"]["grid"]), False
        return [swap(a) for a in args], call_kwargs

    def replay(self, plan, args, kwargs, clones):
        """Runs Triton's kernel once more with `clones` (tensor id -> tensor) in its arguments."""
        call_args, call_kwargs = self.call(plan, args, kwargs, clones)
        plan["original"](plan["fn_obj"], *call_args, **call_kwargs)
        if any(s.tensor.is_cuda for s in plan["snapshots"]):
            plan["torch"].cuda.synchronize()

    def clones_of(self, plan, poisoned=None):
        """Fresh copies of the pre-launch tensors, on their devices: tensor id -> (a view shaped
        as the argument, the whole copied memory). The same tensor twice stays one copy. The
        tensor whose id is `poisoned` is all 0xff bytes instead.

        The hook's own device work is only copies from the host (torch's own code, never a
        library's kernel): a library that serves torch's operators with Triton kernels
        (flag-gems) would otherwise run its kernels inside the launch being recorded, and its
        launcher holds a lock there."""
        torch, clones = plan["torch"], {}
        for s in plan["snapshots"]:
            if id(s.tensor) not in clones:
                host = s.before
                if id(s.tensor) == poisoned:
                    host = torch.full_like(host.view(torch.uint8), 255).view(host.dtype)
                memory = host.to(s.tensor.device, copy=True)
                clones[id(s.tensor)] = (torch.as_strided(memory, s.tensor.shape, s.tensor.stride(), 0), memory)
        return clones

    def spread(self, plan, args, kwargs):
        """Triton's own run-to-run difference: the launch replayed once on fresh copies of its
        inputs, each changed float output compared with what the program's launch wrote
        (float atomics add in no fixed order). {name: largest absolute difference}."""
        torch = plan["torch"]
        clones = self.clones_of(plan)
        self.replay(plan, args, kwargs, {k: v for k, (v, _) in clones.items()})
        out = {}
        for s in plan["snapshots"]:
            if not s.entry["changed"] or not s.after.is_floating_point():
                continue
            again = clones[id(s.tensor)][1].to("cpu")
            if torch.equal(again.view(torch.uint8), s.after.view(torch.uint8)):
                continue
            a, b = again.double(), s.after.double()
            finite = torch.isfinite(a) & torch.isfinite(b)
            diff = (a - b).abs()[finite]
            out[s.entry["name"]] = float(diff.max()) if diff.numel() else float("inf")
        return out

    def probe_outputs(self, plan, args, kwargs):
        """The tensors a replay writes: one replay per tensor (at most 16), that tensor filled
        with 0xff bytes and the others as they were; written if any byte changed. Marks them
        changed (their reference stays what the program's own launch left)."""
        torch, found = plan["torch"], []
        distinct = {}
        for s in plan["snapshots"]:
            distinct.setdefault(id(s.tensor), []).append(s)
        for key, group in list(distinct.items())[:16]:
            clones = self.clones_of(plan, poisoned=key)
            view, memory = clones[key]
            self.replay(plan, args, kwargs, {k: v for k, (v, _) in clones.items()})
            if bool((memory.to("cpu").view(torch.uint8) != 255).any()):  # compared on the host
                for s in group:
                    s.entry["changed"] = True
                    found.append(s.entry["name"])
        return found

    # -- GPU only: Triton's own kernel, timed on clones of the pre-launch tensors ------------
    def time_launch(self, plan, args, kwargs):
        import statistics
        from torch.profiler import ProfilerActivity, profile
        torch, name = plan["torch"], plan["kernel"].name
        clones = {k: view for k, (view, _) in self.clones_of(plan).items()}
        call_args, call_kwargs = self.call(plan, args, kwargs, clones)
        device = next(s.tensor.device for s in plan["snapshots"] if s.tensor.is_cuda)
        with torch.cuda.device(device), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the profiler's notes are not the program's output
            flush = self.flush_buffer(torch, device)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(self.reps):
                    # Every sample starts with a cold L2 of clean lines, as kwb's own timing does:
                    # a read of twice the L2 (a memset would leave dirty lines whose write-back
                    # the timed kernel pays, 10-17% on a short one; src/run/gpu/flush.rs).
                    _l2_read(flush, self.flush_sink(torch, device))
                    plan["original"](plan["fn_obj"], *call_args, **call_kwargs)
                torch.cuda.synchronize()
            kernels = [e for e in prof.events() if "CPU" not in str(getattr(e, "device_type", "CPU"))]
        matched = [e for e in kernels if e.name == name] or [e for e in kernels if e.name.startswith(name)]
        if not matched:
            raise RuntimeError(f"the profiler saw no kernel named {name}")
        return statistics.median(e.time_range.elapsed_us() for e in matched), len(matched)

    def flush_sink(self, torch, device):
        key = ("sink", device)
        if key not in self.flush_buffers:
            self.flush_buffers[key] = torch.empty(1, dtype=torch.int32, device=device)
        return self.flush_buffers[key]

    def flush_buffer(self, torch, device):
        if device not in self.flush_buffers:
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0
            size = 2 * l2 if l2 > 0 else 256 << 20
            # Never written: only read, so whatever it holds does (no kernel of any library).
            self.flush_buffers[device] = torch.empty(size // 4, dtype=torch.int32, device=device)
        return self.flush_buffers[device]


_L2_READ = []


def _l2_read(buffer, sink):
    """Reads all of `buffer` (twice the L2) with a Triton kernel of the hook's own, so that the
    next kernel starts with a cold L2 of clean lines; a torch reduction here could be a
    library's kernel (see clones_of). Its launches pass the hook (`_tls.busy`)."""
    if not _L2_READ:
        # Module globals, not locals: the kernel's names are looked up in this module's
        # globals, and a local here would make them closure variables of the kernel instead.
        globals().update(triton=importlib.import_module("triton"),
                         tl=importlib.import_module("triton.language"))

        @triton.jit
        def _kwb_l2_read(src, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            total = tl.sum(tl.load(src + offs, mask=offs < n, other=0), 0)
            tl.store(out, total, mask=total == 0x5EED)  # keeps the loads; almost never stores

        _L2_READ.append(_kwb_l2_read)
    n = buffer.numel()
    _L2_READ[0][(-(-n // 8192),)](buffer, sink, n, BLOCK=8192)


def _constexpr_json(v, name, problems, tl_dtype):
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        v = v.value
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return _float_json(v)
    if isinstance(v, str):
        return {"str": v}
    if tl_dtype is not None and isinstance(v, tl_dtype):
        return {"dtype": str(v)}
    problems.append(f"constexpr `{name}`: a {type(v).__name__} ({v!r}), which kwb cannot take")
    return {"repr": repr(v)}


def _overlaps(snapshots):
    """Arguments that share memory. The same memory passed twice (same address, dtype and span:
    an in-place update, `dX` written over `dY`) becomes one kwb buffer passed twice, marked with
    `alias_of` on the later argument; any other overlap cannot be rebuilt and is a problem."""
    ranges = [(i, entry["name"], t.data_ptr(), t.data_ptr() + span * t.element_size(), t.dtype, entry)
              for i, t, span, entry in snapshots if span > 0]
    problems = []
    for n, b in enumerate(ranges):
        for a in ranges[:n]:
            if not (a[2] < b[3] and b[2] < a[3]):
                continue
            if a[2] == b[2] and a[3] == b[3] and a[4] == b[4] and "alias_of" not in b[5]:
                b[5]["alias_of"] = a[5].get("alias_of", a[0])
            elif "alias_of" not in b[5] or b[5]["alias_of"] != a[5].get("alias_of", a[0]):
                problems.append(f"arguments {a[0]} (`{a[1]}`) and {b[0]} (`{b[1]}`) share memory")
    return problems


# -- wiring into Triton ------------------------------------------------------------------------
def _wrap_run(original, interp):
    """Wraps `run(self, *args, grid, warmup, **kwargs)`, which every `kernel[grid](...)` reaches."""
    if getattr(original, "_kwb_original", None) is not None:
        return original

    @functools.wraps(original)
    def run(self, *args, **kwargs):
        entry = _capture.by_object.get(id(self))
        if entry is not None and entry[0] is self and entry[1].closed and not kwargs.get("warmup") \
                and not _tls.benching:
            entry[1].launches += 1
            entry[1].skipped += 1
            _capture.launches += 1
            return original(self, *args, **kwargs)
        if kwargs.get("warmup"):  # compiles only; nothing runs
            return original(self, *args, **kwargs)
        if _tls.benching:
            _capture.bench_launches += 1
            return original(self, *args, **kwargs)
        if _tls.busy:
            return original(self, *args, **kwargs)
        plan = None
        _tls.busy += 1
        try:
            plan = _capture.before(self, interp, args, kwargs, original)
        except Exception as exc:
            _capture.error(self, exc)
        finally:
            _tls.busy -= 1
        try:
            result = original(self, *args, **kwargs)
        except BaseException:  # the program's own error: it goes on up untouched
            if plan is not None:
                _capture.forget(plan)
            raise
        if plan is not None:
            _tls.busy += 1
            try:
                _capture.after(plan, result, args, kwargs)
            except Exception as exc:
                _capture.error(self, exc)
            finally:
                _tls.busy -= 1
        return result

    run._kwb_original = original
    return run


def _wrap_bench(original):
    """The autotuner times each candidate config through run; those launches are not the program's."""
    @functools.wraps(original)
    def _bench(*args, **kwargs):
        _tls.benching += 1
        try:
            return original(*args, **kwargs)
        finally:
            _tls.benching -= 1

    _bench._kwb_original = original
    return _bench


def _patch(module, class_name, method, wrap):
    cls = getattr(module, class_name, None)
    if cls is not None and callable(getattr(cls, method, None)) and not hasattr(getattr(cls, method), "_kwb_original"):
        setattr(cls, method, wrap(getattr(cls, method)))
        _capture.patched = True


_PATCHES = {
    "triton.runtime.jit": lambda m: _patch(m, "JITFunction", "run", lambda f: _wrap_run(f, False)),
    "triton.runtime.interpreter": lambda m: _patch(m, "InterpretedFunction", "run", lambda f: _wrap_run(f, True)),
    "triton.runtime.autotuner": lambda m: _patch(m, "Autotuner", "_bench", _wrap_bench),
}


def _apply(name, module):
    try:
        _PATCHES[name](module)
    except Exception as exc:
        _capture.error(None, exc)


class _PatchingLoader:
    """Runs the real loader, then patches the module it made."""

    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _apply(self._name, module)

    def __getattr__(self, attr):
        return getattr(self._loader, attr)


class _PatchOnImport:
    """A meta-path finder that finds nothing itself: the usual finders load the Triton
    modules we patch, and we patch each right after it has run."""

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHES:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None


def _chain_sitecustomize():
    """Runs the sitecustomize we hide (further down sys.path), as `site` would have."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    ours = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    try:
        importlib.import_module("sitecustomize")
    except Exception as exc:
        if not (isinstance(exc, ImportError) and exc.name == "sitecustomize"):  # absent is fine
            print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}",
                  file=sys.stderr)
    if "sitecustomize" not in sys.modules and ours is not None:
        sys.modules["sitecustomize"] = ours


def _guarded(step):
    try:
        step()
    except Exception:
        pass  # at exit there is nobody left to tell


_capture = None
if os.environ.get("KWB_CAPTURE_DIR"):
    _capture = _Capture(os.environ["KWB_CAPTURE_DIR"])
    for _name in _PATCHES:
        if _name in sys.modules:  # imported before us: unusual, but patch it now
            _apply(_name, sys.modules[_name])
    sys.meta_path.insert(0, _PatchOnImport())
    atexit.register(lambda: _guarded(_capture.summary))
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _capture.reset())
_chain_sitecustomize()
