"""The form admins set quotas with and VO managers request them with (names are checked by the services)."""
from django import forms

from accounting.models import Quota


class QuotaForm(forms.Form):
    subject_type = forms.ChoiceField(choices=Quota.Subject.choices, label="Subject")
    subject = forms.CharField(max_length=500, label="Name (VO, DN or project)")
    vo = forms.CharField(max_length=200, required=False, label="Counted in VO",
                         help_text="for a person or project: the VO whose usage counts (admins: blank for all VOs)")  # fmt: skip
    metric = forms.ChoiceField(choices=Quota.Metric.choices)
    period = forms.ChoiceField(choices=Quota.Period.choices, initial=Quota.Period.MONTH)
    period_start = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}))
    period_end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}),
                                 help_text="exclusive; required for a custom window")  # fmt: skip
    limit = forms.FloatField(min_value=0.000001)
    thresholds = forms.CharField(initial="80,100", help_text="percentages, comma separated")
    notify_emails = forms.CharField(required=False, label="Also e-mail", help_text="comma separated addresses")
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_thresholds(self) -> list[int]:
        try:
            values = [int(part) for part in self.cleaned_data["thresholds"].replace(" ", "").split(",") if part]
        except ValueError:
            raise forms.ValidationError("whole percentages, e.g. 80,100") from None
        if not values:
            raise forms.ValidationError("at least one percentage")
        return values
