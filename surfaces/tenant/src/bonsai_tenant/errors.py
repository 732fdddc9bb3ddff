"""The tenant package's errors: one base, plus the HTTP-facing error that carries its status."""

from __future__ import annotations

from ._vendor.bonsai.errors import BonsaiError


class TenantError(BonsaiError):
    """Base of every error bonsai_tenant raises on purpose."""


class ConfigError(TenantError):
    """The tenants/models configuration is wrong; the message names the file and the key."""


class ToolError(TenantError):
    """A tool was declared or called wrongly; the message names the tool."""


class InvalidRequest(TenantError):
    """A request the backend cannot serve as asked (bad tool schema, prompt too long): a 400."""


class ApiError(TenantError):
    """An HTTP request is refused: carries the status and the OpenAI-style error fields."""

    def __init__(
        self, status: int, message: str, *, type: str = "invalid_request_error",
        param: str | None = None, code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict:
        """The JSON body OpenAI clients expect: {"error": {message, type, param, code}}."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}
