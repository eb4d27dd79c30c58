"""Exception classes defined in tebench/ (runtime: every module imported, classes defined in it that derive from
BaseException), and whether each derives from tebench.errors.TebenchError."""
import importlib, inspect, pathlib, pkgutil, sys
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT))
import tebench
try:
    from tebench.errors import TebenchError
except ImportError:  # a tree from before the common base
    class TebenchError(Exception):
        pass

def exceptions():
    out, failed = [], []
    for mod in pkgutil.walk_packages(tebench.__path__, "tebench."):
        if mod.name.endswith("__main__"):
            continue
        try:
            m = importlib.import_module(mod.name)
        except Exception as exc:  # a worker module that needs a GPU library
            failed.append((mod.name, repr(exc)[:80]))
            continue
        for name, obj in vars(m).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == m.__name__:
                out.append((m.__name__, name, issubclass(obj, TebenchError), [b.__name__ for b in obj.__mro__[1:-1]]))
    return out, failed

if __name__ == "__main__":
    out, failed = exceptions()
    for mod, name, ok, mro in sorted(out):
        print(f"{'T' if ok else '-'} {mod}.{name}  ({' > '.join(mro)})")
    print(f"exception classes: {len(out)}; deriving from TebenchError: {sum(o[2] for o in out)} "
          f"(TebenchError itself counted); not: {sum(not o[2] for o in out)}")
    if failed:
        print("modules not importable here:", failed)
