"""Template context: the user's scope (`gl_scope`), so navigation shows only what the role may open."""
from portal.roles import scope_of


def scope(request):
    return {"gl_scope": scope_of(getattr(request, "user", None))}
