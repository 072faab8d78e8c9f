"""What every ``inferbus`` command shares: AWS session options, one-line errors, JSON output, progress.

A command that talks to AWS adds :func:`add_aws_options` to its parser and makes its clients
with :func:`aws_client`; :func:`run_command` runs it and turns every error a person can meet
(no region, no credentials, an unknown profile, a queue or bus that does not exist, no
network, a file that cannot be read, ...) into one line on stderr that says what to do next,
with a non-zero exit. ``--debug`` shows the traceback instead.

=====  ===============================================================================
exit   meaning
=====  ===============================================================================
0      done
1      the command ran and found a problem (a ledger that does not balance, entries
       PutEvents refused), or AWS failed the request
2      the command could not run as given: a bad option, input or configuration
130    interrupted (Ctrl-C)
=====  ===============================================================================

Example
-------
>>> parser = argparse.ArgumentParser(prog="inferbus send")
>>> add_aws_options(parser)
>>> args = parser.parse_args(["--region", "eu-west-1"])
>>> (args.profile, args.region, args.endpoint_url)
(None, 'eu-west-1', None)
>>> explain(FileNotFoundError(2, "No such file or directory", "events.jsonl"))
(2, 'events.jsonl: No such file or directory')
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

__all__ = ["CommandError", "OneLineParser", "add_aws_options", "aws_client", "explain", "json_safe", "print_json",
           "progress_reporter", "run_command"]

T = TypeVar("T")
USAGE, FAILED, INTERRUPTED = 2, 1, 130
MISSING_QUEUE_CODES = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
AUTH_CODES = {"AccessDenied", "AccessDeniedException", "UnrecognizedClientException", "InvalidClientTokenId",
              "ExpiredToken", "ExpiredTokenException", "InvalidSignatureException", "SignatureDoesNotMatch",
              "AuthFailure", "MissingAuthenticationToken"}
THROTTLING_CODES = {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}


class CommandError(Exception):
    """An error a command reports itself: the message is the whole line (after ``inferbus <command>: ``).

    Parameters
    ----------
    message
        What went wrong and what to do next.
    exit_code
        2 (default: the command cannot run as given) or 1 (it ran and failed).
    """

    def __init__(self, message: str, exit_code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line naming the command, and ``--help`` to learn more."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    """``--profile``, ``--region`` and ``--endpoint-url``: where and as whom a command calls AWS."""
    group = parser.add_argument_group("AWS")
    group.add_argument("--profile", help="the AWS profile to use (default: AWS_PROFILE, else the default chain)")
    group.add_argument("--region", help="the AWS region (default: AWS_REGION, else AWS_DEFAULT_REGION, else the profile's)")
    group.add_argument("--endpoint-url", metavar="URL", type=endpoint_url,
                       help="send every AWS request here instead (a local endpoint, e.g. the embedded pipeline's)")


def endpoint_url(text: str) -> str:
    """``--endpoint-url``: a URL with its scheme, as the AWS CLI requires (``http://localhost:4566``)."""
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"expected a URL with its scheme, such as http://{text.split('://')[-1] or 'localhost:4566'}, got {text!r}")
    return text


def aws_client(args: argparse.Namespace, service: str) -> Any:
    """A boto3 client for ``service`` as the command's AWS options say.

    Raises
    ------
    botocore.exceptions.ProfileNotFound, botocore.exceptions.NoRegionError
        Explained as one line by :func:`run_command`.
    """
    import boto3

    # boto3 reads AWS_DEFAULT_REGION only; the AWS CLI v2 and the SDKs read AWS_REGION first.
    region = getattr(args, "region", None) or os.environ.get("AWS_REGION") or None
    session = boto3.session.Session(profile_name=getattr(args, "profile", None), region_name=region)
    return session.client(service, endpoint_url=getattr(args, "endpoint_url", None))


def _client_error(error: Any) -> tuple[int, str]:
    details = error.response.get("Error", {})
    code, message = details.get("Code", "?"), details.get("Message", str(error))
    operation = getattr(error, "operation_name", "the request")
    if code in MISSING_QUEUE_CODES:
        return USAGE, (f"{operation}: no such queue ({message}); check the queue URL (stack outputs ...QueueUrl) "
                       "and --region/--profile")
    if code == "ResourceNotFoundException":
        return USAGE, f"{operation}: {message}; check the name (stack outputs) and --region/--profile"
    if code in AUTH_CODES:
        return USAGE, (f"AWS refused {operation} ({code}: {message}); check your credentials (--profile, "
                       "`aws sso login`) and that they may do this")
    if code in THROTTLING_CODES:
        return FAILED, f"AWS throttled {operation} ({message}); wait a moment and run it again"
    return FAILED, f"{operation} failed: {code}: {message}"


def explain(error: BaseException) -> tuple[int, str] | None:
    """``(exit code, one line saying what to do)`` for an error people meet; ``None`` for a bug.

    Parameters
    ----------
    error
        What a command raised.
    """
    from botocore import exceptions as boto

    if isinstance(error, CommandError):
        return error.exit_code, str(error)
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED, "interrupted"
    if isinstance(error, boto.NoRegionError):
        return USAGE, "no AWS region: pass --region (or set AWS_REGION, or a region in your profile)"
    if isinstance(error, boto.NoCredentialsError | boto.PartialCredentialsError):
        return USAGE, ("no AWS credentials: run `aws configure` or `aws sso login --profile NAME` and pass --profile "
                       "NAME (or set AWS_PROFILE)")
    if isinstance(error, boto.ProfileNotFound):
        return USAGE, f"{error}: list yours with `aws configure list-profiles`, or leave --profile out"
    if isinstance(error, boto.EndpointConnectionError | boto.ConnectTimeoutError | boto.ReadTimeoutError):
        return FAILED, f"cannot reach AWS ({error}); check your network, --region and --endpoint-url"
    if isinstance(error, boto.ParamValidationError):
        return USAGE, f"invalid request: {' '.join(str(error).split())}"
    if isinstance(error, boto.ClientError):
        return _client_error(error)
    if isinstance(error, boto.BotoCoreError):
        return FAILED, f"AWS request failed: {error}"
    if isinstance(error, OSError) and error.filename is not None:
        return USAGE, f"{error.filename}: {error.strerror or error}"
    from inferbus.model.settings import SettingsError
    from infra.limits import CloudFormationLimitError

    if isinstance(error, SettingsError):
        return USAGE, str(error)
    if isinstance(error, CloudFormationLimitError):  # CloudFormation's limit, with what to do: not a bug
        return FAILED, str(error)
    from inferbus.runtime.rabbitmq import BrokerUnavailable

    if isinstance(error, BrokerUnavailable):  # names the command that starts one
        return FAILED, str(error)
    redis = sys.modules.get("redis")  # only a command that used the Redis claims store can have met its errors
    if redis is not None and isinstance(error, redis.exceptions.RedisError):
        from inferbus.runtime.local_redis import refusal

        return FAILED, refusal(error)
    return None


def ignore_interrupted_jsii() -> None:
    """Keep Ctrl-C quiet after a command that synthesized the app: the terminal's SIGINT also stops jsii's node
    process, and jsii's exit hook then writes to its closed pipe; that ``BrokenPipeError`` is expected, not a fault."""
    default = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, BrokenPipeError) and "jsii" in repr(unraisable.object):
            return
        default(unraisable)

    sys.unraisablehook = hook


DECLARATIONS = re.compile(r"[/\\]pipeline[/\\]")  # where the declarations live, in the project


def run_command(command: str, run: Callable[[], int], *, debug: bool = False) -> int:
    """Run a command; print any error as one line on stderr (``--debug``: the traceback) and return the exit code.

    Parameters
    ----------
    command
        Its name, the start of every error line (``inferbus send``).
    run
        The command; returns its exit code.
    debug
        Re-raise instead, so the traceback shows.
    """
    try:
        return run()
    except BaseException as error:  # noqa: BLE001 - every error becomes one line, or a traceback with --debug
        if isinstance(error, SystemExit) or debug:
            raise
        known = explain(error)
        frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ else []
        declared = [frame for frame in frames if DECLARATIONS.search(frame.filename)]
        if known is None and declared:  # raised in a module of pipeline/: the declarations, yours to fix
            where = declared[-1]
            at = "pipeline/" + DECLARATIONS.split(where.filename)[-1]
            known = FAILED, (f"{type(error).__name__} in {at}:{where.lineno}: {error}; fix the declaration there "
                             "(docs/extending.md, Reference; --debug shows the traceback)")
        elif known is None:
            where = frames[-1] if frames else None
            at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
            known = FAILED, (f"unexpected {type(error).__name__}{at}: {error}. This is a bug in inferbus: run again "
                             "with --debug for the traceback and report it")
        code, message = known
        print(f"{command}: {message}", file=sys.stderr)
        return code


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by ``None`` (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def print_json(value: Any, *, indent: int | None = 2) -> None:
    """Print ``value`` as strict JSON (no NaN; dates and other objects as strings)."""
    print(json.dumps(json_safe(value), indent=indent, default=str, allow_nan=False))


def print_records(console: Any, title: str, records: Iterable[tuple[str, Sequence[tuple[str, str]]]]) -> None:
    """Rows keyed by an id people copy: each id in full on its own line, then its fields, wrapped between words.

    A table at 80 columns folds a 36-character id (and any long token) across lines; this never splits a
    token, so an id or a queue name can be copied with a double-click.

    Parameters
    ----------
    console
        A ``rich.console.Console``: its width is the wrap width.
    title
        The first line.
    records
        ``(id, [(field, value), ...])`` per row.

    Examples
    --------
    >>> from rich.console import Console
    >>> print_records(Console(width=40), "1 message", [("3f2b-9c1e", [("verdict", "moves back")])])
    1 message
    3f2b-9c1e
        verdict: moves back
    """
    import textwrap

    from rich.text import Text

    width = max(console.width, 40)
    console.print(Text(title, style="bold"), soft_wrap=True)
    for key, fields in records:
        console.print(Text(key, style="bold"), soft_wrap=True)
        for name, value in fields:
            lead = f"    {name}: "
            lines = textwrap.wrap(value, width=width, initial_indent=lead, subsequent_indent=" " * len(lead),
                                  break_long_words=False, break_on_hyphens=False) or [lead.rstrip()]
            for line in lines:
                console.print(Text(line), soft_wrap=True)


def progress_reporter(command: str, run: Callable[[Callable[[str, int, int], None]], T]) -> T:
    """Run ``run(progress)``, showing ``progress(stage, done, total)``: bars on a terminal, else a line per stage.

    Progress goes to stderr, so a piped stdout holds only the result.
    """
    if not sys.stderr.isatty():
        started: set[str] = set()

        def lines(stage: str, done: int, total: int) -> None:
            if stage not in started:
                started.add(stage)
                print(f"{command}: {stage} …", file=sys.stderr, flush=True)
            if done >= total and f"{stage}/done" not in started:
                started.add(f"{stage}/done")
                print(f"{command}: {stage} done ({done}/{total})", file=sys.stderr, flush=True)

        return run(lines)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(transient=True, console=Console(stderr=True)) as bars:
        tasks: dict[str, Any] = {}

        def show(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total)
            bars.update(tasks[stage], completed=done, total=total)

        return run(show)
