"""Docker-free bundling of each Lambda function: only the packages and model files it imports.

Each function gets an asset of its own, made in three steps:

1. pip installs ``functions/requirements.txt`` for the Lambda's Python and CPU once per synth
   (platform wheels; boto3 and what it needs are left out: the runtime provides them);
2. the function's handler is imported in a fresh interpreter here, with its environment, X-Ray
   tracing on as in Lambda, and an audit hook on ``open``: that gives the distributions it
   imports at init and the model files it reads (a function loads its models at init);
3. its asset gets those distributions (their files as their ``RECORD`` lists them, less the
   subpackages nothing imported, such as test suites and onnxruntime's model-building tools,
   and type stubs), ``inferbus_lambda``, the handler's own package and any other package of
   ``functions/`` it imports (``event_patterns``), and ``models/`` with the
   manifest and the files it read. So a module a handler imports only while it handles an event
   (never at init) is not shipped: import what you need at module level, as the kit does. Bytecode is compiled into it when an interpreter of the Lambda's
   Python version is on this machine (``python3.14`` for the default), so Lambda does not
   compile every module at each cold start.

A function whose settings say ``package="image"`` is a container image instead
(:func:`container_image`), built at deploy time from ``functions/Dockerfile``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_DIR = REPO_ROOT / "functions"
MODELS_DIR = REPO_ROOT / "models"
SHARED_PACKAGE = "inferbus_lambda"
# The Lambda Python runtime ships boto3 and these; bundling our own copy would shadow them
# (aws-xray-sdk pulls in botocore) and could split boto3 from its botocore.
RUNTIME_PROVIDED = ("boto3", "botocore", "urllib3", "jmespath", "dateutil", "python_dateutil", "six", "s3transfer")
PIP_PLATFORMS = {
    "arm64": ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"),
    "x86_64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
}

# Run in a fresh interpreter with the function's environment: import the handler (which loads its
# models), then print the distributions imported and the model files read.
TRACE = """
import importlib, json, sys, sysconfig
from importlib.metadata import packages_distributions
models_dir, functions_dir = sys.argv[2], sys.argv[3]
opened = set()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(models_dir):
        opened.add(args[0][len(models_dir):].lstrip("/"))
sys.addaudithook(hook)
module, _, attribute = sys.argv[1].rpartition(".")
getattr(importlib.import_module(module), attribute)
site = sysconfig.get_paths()["purelib"]
modules = sorted(name for name, mod in list(sys.modules.items()) if (getattr(mod, "__file__", None) or "").startswith(site))
known = packages_distributions()
distributions = {d for name in modules for d in known.get(name.partition(".")[0], [])}
local = sorted({name.partition(".")[0] for name, mod in list(sys.modules.items())
                if (getattr(mod, "__file__", None) or "").startswith(functions_dir)})
print(json.dumps({"distributions": sorted(distributions), "modules": modules, "files": sorted(opened), "local": local}))
"""


def canonical(name: str) -> str:
    """A distribution's name as pip compares them: ``aws_lambda_powertools`` -> ``aws-lambda-powertools``."""
    return name.lower().replace("_", "-").replace(".", "-")


def model_files(models: Sequence[str] | None = None) -> list[Path]:
    """The manifest and every file it names for ``models`` (default: every model): ONNX files, tokenizers."""
    manifest_path = MODELS_DIR / "manifest.json"
    files = [manifest_path]
    for name, model in json.loads(manifest_path.read_text())["models"].items():
        if models is not None and name not in models:
            continue
        files.append(MODELS_DIR / model["file"])
        if "tokenizer" in model:
            files.append(MODELS_DIR / model["tokenizer"]["file"])
    return files


def handler_package(handler: str) -> str:
    """``image_classifier.handler.lambda_handler`` -> ``image_classifier``: the handler's own folder."""
    return handler.partition(".")[0]


def bundle_fingerprint(architecture: str, python_version: str, handler: str, models: Sequence[str]) -> str:
    """Hash of everything that can go into a function's asset, so a new model, arch or line of code is a new asset."""
    digest = hashlib.sha256(f"{architecture}|{python_version}|{handler}|{','.join(sorted(models))}".encode())
    digest.update(Path(__file__).read_bytes())  # how the bundle is made is part of what it is
    sources = [p for p in FUNCTIONS_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    for path in sorted(sources + model_files(models)):
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def install_dependencies(architecture: str, python_version: str) -> Path:
    """Every requirement, for the Lambda's platform, in a folder reused by every function of this synth."""
    requirements = b"".join((FUNCTIONS_DIR / name).read_bytes() for name in ("requirements.txt", "requirements-no-deps.txt"))
    key = hashlib.sha256(requirements + f"{architecture}|{python_version}".encode()).hexdigest()[:16]
    site = Path(tempfile.gettempdir()) / f"inferbus-site-{key}"
    if (site / ".complete").exists():
        return site
    shutil.rmtree(site, ignore_errors=True)
    platforms = [arg for tag in PIP_PLATFORMS[architecture] for arg in ("--platform", tag)]
    print(f"inferbus bundling: installing functions/requirements*.txt for Lambda (Python {python_version}, "
          f"{architecture}) into {site}, once", file=sys.stderr)
    for name, extra in (("requirements.txt", []), ("requirements-no-deps.txt", ["--no-deps"])):
        # pip's own warnings (a pip.conf location that is missing, ...) are shown only if the install fails.
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "-r", str(FUNCTIONS_DIR / name), *extra, "--target", str(site),
             "--only-binary=:all:", "--implementation", "cp", "--python-version", python_version,
             *platforms, "--no-compile", "--upgrade"],
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"bundling: pip could not install functions/{name} for Lambda (Python {python_version}, "
                               f"{architecture}); check your network or index:\n{done.stderr.strip()}")
    (site / ".complete").touch()
    return site


def trace_imports(handler: str, environment: Mapping[str, str]) -> dict[str, list[str]]:
    """What ``handler`` imports and reads at init, traced in a fresh interpreter on this machine.

    ``environment`` is the function's (values CDK resolves only at deploy are placeholders:
    nothing is called at init). Tracing is on, as in Lambda, so the X-Ray SDK counts.
    """
    variables = {key: ("placeholder" if cdk.Token.is_unresolved(value) else str(value)) for key, value in environment.items()}
    env = {
        "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(FUNCTIONS_DIR), "LAMBDA_TASK_ROOT": str(REPO_ROOT),
        "AWS_LAMBDA_FUNCTION_NAME": "inferbus-trace", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "trace", "AWS_SECRET_ACCESS_KEY": "trace", "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR",
        "AWS_EC2_METADATA_DISABLED": "true", **variables,
    }
    done = subprocess.run([sys.executable, "-c", TRACE, handler, str(MODELS_DIR), str(FUNCTIONS_DIR)], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bundling {handler}: importing it to see what it needs failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def installed_distributions(site: Path) -> dict[str, Path]:
    """The distributions pip installed for the Lambda, by canonical name -> their ``.dist-info``."""
    return {canonical(info.name.removesuffix(".dist-info").rsplit("-", 1)[0]): info for info in site.glob("*.dist-info")}


def imported_file(site: Path, relative: str, imported: set[str]) -> bool:
    """Whether a distribution's file can be used by the modules imported: not in a Python package
    (a folder with ``__init__.py``) that nothing imported, not a type stub or a Cython header."""
    parts = Path(relative).parts
    if parts[-1].endswith((".pyi", ".pxd")):
        return False
    for depth in range(2, len(parts)):  # every package folder below the top-level one
        folder = site.joinpath(*parts[:depth])
        if (folder / "__init__.py").is_file() and ".".join(parts[:depth]) not in imported:
            return False
    return True


def copy_distribution(site: Path, info: Path, output: Path, imported: set[str]) -> None:
    """Copy the files of one installed distribution (as its ``RECORD`` lists them) that the
    ``imported`` modules can use (:func:`imported_file`), and its metadata."""
    for line in (info / "RECORD").read_text().splitlines():
        relative = line.rsplit(",", 2)[0]
        if not relative or relative.startswith(".."):
            continue
        if not relative.startswith(info.name) and not imported_file(site, relative, imported):
            continue
        source, target = site / relative, output / relative
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@functools.cache
def bytecode_interpreter(python_version: str) -> str | None:
    """An interpreter of the Lambda's Python on this machine, or ``None``: said once per synth, not per function."""
    interpreter = sys.executable if f"{sys.version_info.major}.{sys.version_info.minor}" == python_version else (
        shutil.which(f"python{python_version}"))
    if interpreter is None:
        print(f"inferbus bundling: no python{python_version} on this machine, so the functions ship without bytecode "
              "(Lambda compiles each module at a cold start); install it to compile them here", file=sys.stderr)
    return interpreter


def compile_bytecode(output: Path, python_version: str) -> bool:
    """Compile the asset's modules for the Lambda's Python, so its cold starts do not; ``False``
    when no interpreter of that version is on this machine (the asset then ships sources only)."""
    interpreter = bytecode_interpreter(python_version)
    if interpreter is None:
        return False
    subprocess.run([interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
                    str(output)], check=True)
    return True


@jsii.implements(cdk.ILocalBundling)
class LocalPipBundling:
    """Bundle one function on this machine with pip's cross-platform wheel selection (no Docker)."""

    def __init__(self, architecture: str, python_version: str, handler: str, models: Sequence[str],
                 environment: Mapping[str, str]) -> None:
        self.architecture = architecture
        self.python_version = python_version
        self.handler = handler
        self.models = tuple(models)
        self.environment = dict(environment)

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:  # noqa: ARG002
        output = Path(output_dir)
        site = install_dependencies(self.architecture, self.python_version)
        traced = trace_imports(self.handler, self.environment)
        installed = installed_distributions(site)
        # What was imported here but is no dependency of functions/requirements.txt was an optional
        # import (the X-Ray SDK patches requests if it is there): in Lambda it is not there either.
        for distribution in sorted({canonical(name) for name in traced["distributions"]} & set(installed)):
            if distribution not in {canonical(name) for name in RUNTIME_PROVIDED}:
                copy_distribution(site, installed[distribution], output, set(traced["modules"]))
        ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
        # The shared package, the handler's own, and any other package of functions/ it imports (event_patterns).
        for package in sorted({SHARED_PACKAGE, handler_package(self.handler), *traced["local"]}):
            shutil.copytree(FUNCTIONS_DIR / package, output / package, dirs_exist_ok=True, ignore=ignore)
        models_out = output / "models"
        models_out.mkdir(exist_ok=True)
        declared = {path.name for path in model_files(self.models)}
        for name in {"manifest.json", *(Path(f).name for f in traced["files"])} & declared:
            shutil.copy2(MODELS_DIR / name, models_out / name)
        compile_bytecode(output, self.python_version)
        return True


def python_lambda_code(architecture: str, python_version: str, *, handler: str, models: Sequence[str],
                       environment: Mapping[str, str]) -> lambda_.Code:
    """A zip function's own code asset: what ``handler`` imports and the files of ``models`` it reads.

    Parameters
    ----------
    architecture, python_version
        The Lambda's CPU and Python: pip installs wheels for them.
    handler
        ``module.function`` under ``functions/``.
    models
        The models its declaration names: only their files can go in (those the handler reads).
    environment
        The function's environment (to import the handler as Lambda will).
    """
    runtime = lambda_.Runtime(f"python{python_version}", lambda_.RuntimeFamily.PYTHON)
    return lambda_.Code.from_asset(
        str(FUNCTIONS_DIR),
        asset_hash=bundle_fingerprint(architecture, python_version, handler, models),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        bundling=cdk.BundlingOptions(
            image=runtime.bundling_image,
            local=LocalPipBundling(architecture, python_version, handler, models, environment),
            # Docker is only a fallback that LocalPipBundling never asks for.
            command=["bash", "-c", "echo 'inferbus bundles locally with pip' && exit 1"],
            environment={"TARGET_ARCH": architecture},
        ),
    )


DOCKERFILE = FUNCTIONS_DIR / "Dockerfile"
DOCKER_PLATFORMS = {"arm64": "LINUX_ARM64", "x86_64": "LINUX_AMD64"}


def container_image(handler: str, models: Sequence[Mapping[str, Any]], architecture: str,
                    python_version: str) -> lambda_.DockerImageCode:
    """A function as a container image on the AWS Lambda Python base image (``functions/Dockerfile``).

    For a function whose models are too big for a zip bundle (250 MB unzipped; an image may
    hold 10 GB). Synthesizing needs no Docker; ``cdk deploy`` builds the image (Docker where
    you deploy). The build context is the repository with everything left out but
    ``functions/``, the manifest and the files of ``models`` (manifest entries); the image
    runs ``handler`` (``ImageConfig.Command``).
    """
    from aws_cdk import aws_ecr_assets as ecr_assets

    keep = ["functions", "models/manifest.json"]
    for model in models:
        keep.append(f"models/{model['file']}")
        if "tokenizer" in model:
            keep.append(f"models/{model['tokenizer']['file']}")
    return lambda_.DockerImageCode.from_image_asset(
        str(REPO_ROOT),
        file=str(DOCKERFILE.relative_to(REPO_ROOT)),
        build_args={"PYTHON_VERSION": python_version},
        cmd=[handler],
        platform=getattr(ecr_assets.Platform, DOCKER_PLATFORMS[architecture]),
        exclude=["*", *(f"!{path}" for path in keep), "**/__pycache__"],
        ignore_mode=cdk.IgnoreMode.DOCKER,
    )
