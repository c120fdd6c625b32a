"""What :meth:`EngineCore.submit <cuzk.engine.core.EngineCore.submit>` checks before it takes
the engine lock: a caller's job id, and the request opened by its family.

Opening parses untrusted bytes (a C1 output can be tens of MB), so it runs outside the lock;
kept here so the core holds only the decisions made under it.
"""

from __future__ import annotations

import logging
from typing import Any

from cuzk.engine.config import EngineConfig
from cuzk.engine.family import family_for
from cuzk.engine.opener import PayloadOpener
from cuzk.engine.request import ProofRequest
from cuzk.errors import BadInput, BadPayload, CuzkError

log = logging.getLogger(__name__)

MAX_JOB_ID_LEN = 128

# What reading untrusted bytes raises besides our own errors (a parser meeting input it did not
# expect); never an internal error for the engine's caller.
_PARSE_ERRORS = (ValueError, RecursionError, OverflowError, TypeError, KeyError, IndexError)


def check_job_id(job_id: object) -> None:
    """A caller's job id names the job in every status and journal line: short and printable."""
    if (
        not isinstance(job_id, str)
        or not 0 < len(job_id) <= MAX_JOB_ID_LEN
        or not job_id.isprintable()
    ):
        raise BadInput(f"a job id must be 1–{MAX_JOB_ID_LEN} printable characters, got {job_id!r}")


def open_request(
    request: ProofRequest, config: EngineConfig, opener: PayloadOpener | None = None
) -> tuple[Any, Any]:
    """The family's statement and circuit info for a request (a large bellperson-family
    payload parsed by ``opener``, off this process's GIL); a payload that makes its parser
    fail in any way is BadPayload (logged with its traceback at debug level)."""
    family = family_for(request.circuit_id)
    try:
        # (the bellperson family's open is open_statement, then the key's info)
        if opener is not None and opener.wants(request.payload) and family.name == "bellperson":
            statement = opener.statement(
                request.circuit_id, request.seeds, request.payload, request.priority
            )
            if statement is not None:
                return statement, family.info(request.circuit_id, config)
        return family.open(request, config)
    except CuzkError:
        raise
    except _PARSE_ERRORS as e:
        if not request.payload:
            raise
        log.debug("payload of %s does not parse", request.circuit_id, exc_info=True)
        raise BadPayload(
            f"{request.circuit_id}: the payload does not parse ({type(e).__name__}: {e})"[:500]
        ) from None
