"""Docker-free bundling of the Lambda code: pip with platform tags, then our sources and models.

The bundle holds ``functions/`` (handlers + shared package), the pip dependencies of
``functions/requirements.txt`` for the Lambda's Python and CPU, and, under ``models/``, the
manifest and every file it names for a model (ONNX files, tokenizers; not the held-out
data). boto3 is not bundled: the runtime provides it.

A function whose settings say ``package="image"`` is a container image instead
(:func:`container_image`), built at deploy time from ``functions/Dockerfile``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_DIR = REPO_ROOT / "functions"
MODELS_DIR = REPO_ROOT / "models"
# The Lambda Python runtime ships boto3 and these; bundling our own copy would shadow them
# (aws-xray-sdk pulls in botocore) and could split boto3 from its botocore.
RUNTIME_PROVIDED = ("botocore", "urllib3", "jmespath", "dateutil", "python_dateutil", "six", "s3transfer")
PIP_PLATFORMS = {
    "arm64": ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"),
    "x86_64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
}


def model_files() -> list[Path]:
    """The manifest and every file it names for a model (the model, its tokenizer)."""
    manifest_path = MODELS_DIR / "manifest.json"
    files = [manifest_path]
    for model in json.loads(manifest_path.read_text())["models"].values():
        files.append(MODELS_DIR / model["file"])
        if "tokenizer" in model:
            files.append(MODELS_DIR / model["tokenizer"]["file"])
    return files


def _bundle_files() -> list[Path]:
    sources = [p for p in FUNCTIONS_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sorted(sources + model_files())


def bundle_fingerprint(architecture: str, python_version: str) -> str:
    """Hash of everything that goes into the bundle, so a new model or arch is a new asset."""
    digest = hashlib.sha256(f"{architecture}|{python_version}".encode())
    digest.update(Path(__file__).read_bytes())  # how the bundle is made is part of what it is
    for path in _bundle_files():
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(cdk.ILocalBundling)
class LocalPipBundling:
    """Bundle on this machine with pip's cross-platform wheel selection (no Docker)."""

    def __init__(self, architecture: str, python_version: str) -> None:
        self.architecture = architecture
        self.python_version = python_version

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:  # noqa: ARG002
        platforms = [arg for tag in PIP_PLATFORMS[self.architecture] for arg in ("--platform", tag)]
        for requirements, extra in (("requirements.txt", []), ("requirements-no-deps.txt", ["--no-deps"])):
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "-r", str(FUNCTIONS_DIR / requirements), *extra, "--target", output_dir,
                 "--only-binary=:all:", "--implementation", "cp", "--python-version", self.python_version,
                 *platforms, "--no-compile", "--upgrade"],
                check=True,
            )
        output = Path(output_dir)
        for name in RUNTIME_PROVIDED:
            for path in [*output.glob(f"{name}"), *output.glob(f"{name}-*.dist-info"), *output.glob(f"{name}.py")]:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        shutil.copytree(FUNCTIONS_DIR, output_dir, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "Dockerfile", "requirements*.txt", "*.egg-info"))
        models_out = output / "models"
        models_out.mkdir(exist_ok=True)
        for model_file in model_files():
            shutil.copy2(model_file, models_out / model_file.name)
        return True


def python_lambda_code(architecture: str, python_version: str) -> lambda_.Code:
    """The one code asset every inferbus function shares."""
    runtime = lambda_.Runtime(f"python{python_version}", lambda_.RuntimeFamily.PYTHON)
    return lambda_.Code.from_asset(
        str(FUNCTIONS_DIR),
        asset_hash=bundle_fingerprint(architecture, python_version),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        bundling=cdk.BundlingOptions(
            image=runtime.bundling_image,
            local=LocalPipBundling(architecture, python_version),
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
