typedef int edhoc_module_placeholder;
