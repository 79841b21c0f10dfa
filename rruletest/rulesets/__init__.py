"""Built-in rulesets. Importing a ruleset module registers its rules in the default RuleSet."""
