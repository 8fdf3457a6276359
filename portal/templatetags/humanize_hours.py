from django import template

register = template.Library()


@register.filter
def hours(value) -> str:
    """Hours with thousands separated by thin spaces and one decimal (units are said beside the number)."""
    try:
        return f"{float(value):,.1f}".replace(",", "\u2009")
    except (TypeError, ValueError):
        return "-"
