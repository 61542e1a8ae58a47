"""Provider adapters, one subpackage per wire dialect (`deepseek/`, `openai_compat/`)."""
