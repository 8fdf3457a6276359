"""Page access by role: `requires("aggregates")` / `requires("people")` after login (`portal/roles.py`)."""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from portal.roles import scope_of

REASONS = {
    "aggregates": "Your account has no reporting role (council, VO manager or admin). Ask an admin to grant one "
    "(manage.py grant_role).",
    "people": "Person-level pages (DNs) are for admins, and for VO managers about their own VOs only.",
}


def forbidden(request, reason: str, status: int = 403):
    return render(request, "portal/forbidden.html", {"reason": reason}, status=status)


def requires(capability: str):
    """Log in first, then refuse with 403 unless the user's scope has `capability` (`aggregates`,
    `people`; `signed_in` asks for nothing more than a login)."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if capability != "signed_in" and not getattr(scope_of(request.user), capability):
                return forbidden(request, REASONS[capability])
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
