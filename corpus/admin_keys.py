"""Admin for API keys: create (the key is shown once), revoke, see when each was last used."""

from django import forms
from django.contrib import admin, messages

from .apikeys import generate_key, hash_key, revoke_api_keys
from .models import SCOPES, ApiKey


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        initial=["read"],
        help_text="'admin' implies every other scope.",
    )
    corpora = forms.CharField(
        required=False,
        help_text="Comma-separated corpus names this key may read and write; empty means every corpus.",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "scopes", "corpora"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["corpora"] = ", ".join(self.instance.corpora or [])

    def clean_corpora(self) -> list[str]:
        return sorted({name.strip() for name in self.cleaned_data["corpora"].split(",") if name.strip()})


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ["name", "prefix", "scope_list", "corpus_list", "status", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    @admin.display(description="corpora")
    def corpus_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.corpora or []) or "all"

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return "active" if obj.is_active else "revoked"

    def save_model(self, request, obj: ApiKey, form, change: bool) -> None:
        if not change:
            key = generate_key()
            obj.prefix = key[:8]
            obj.key_hash = hash_key(key)
            super().save_model(request, obj, form, change)
            messages.warning(
                request,
                f"API key for “{obj.name}”: {key} — copy it now; it is stored only as a hash "
                "and will not be shown again.",
            )
            return
        super().save_model(request, obj, form, change)

    @admin.action(description="Revoke selected API keys")
    def revoke(self, request, queryset) -> None:
        count = revoke_api_keys(queryset)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)
