from django.apps import AppConfig


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    default_auto_field = "django.db.models.BigAutoField"
