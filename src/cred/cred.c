/* placeholder until the module lands */
typedef int edhoc_module_placeholder;
